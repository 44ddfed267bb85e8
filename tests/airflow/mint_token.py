"""A token command for jobtrail's Airflow tests: prints a JWT signed with the test server's
secret ($JOBTRAIL_TEST_AIRFLOW_SECRET), and counts its runs in a file.

    mint_token.py COUNT_FILE FIRST_TTL THEN_TTL

The first run prints a token that expires FIRST_TTL seconds from now (negative: already
expired, so the server answers 401), every later run one that expires THEN_TTL from now.
Each token printed is also appended to COUNT_FILE.tokens, for the test to look for it in
what jobtrail stored.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from airflow_rig import mint


def main() -> None:
    count_file, first, then = Path(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
    runs = int(count_file.read_text()) if count_file.is_file() else 0
    count_file.write_text(str(runs + 1))
    token = mint(os.environ["JOBTRAIL_TEST_AIRFLOW_SECRET"], first if runs == 0 else then)
    with Path(f"{count_file}.tokens").open("a") as tokens:
        tokens.write(token + "\n")
    print(token)


if __name__ == "__main__":
    main()
