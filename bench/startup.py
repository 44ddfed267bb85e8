"""Benchmark: CLI start-up. `jobtrail --version` and `jobtrail status OP` on a SQLite ledger,
each a fresh process as a user or an agent's shell runs it, against a bare `python -c pass`
timed in the same run: the ratio is the interpreter's own start-up over jobtrail's, so what
the command imports beyond Python itself shows as the distance from 1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import PROVIDER_FILE, ROOT, TOKEN, TOKEN_ENV, Figure, Report, median

JOBTRAIL = str(Path(sys.executable).with_name("jobtrail"))


def timed(command: list[str], env: dict[str, str], runs: int) -> float:
    """Median wall seconds of `runs` runs of `command` (after one untimed run)."""
    samples = []
    for i in range(runs + 1):
        started = time.perf_counter()
        subprocess.run(command, cwd=ROOT, env=env, capture_output=True, check=True)
        if i:
            samples.append(time.perf_counter() - started)
    return median(samples)


async def run(quick: bool) -> Report:
    report = Report("startup")
    runs = 5 if quick else 20
    with tempfile.TemporaryDirectory(prefix="jobtrail-bench-startup-") as folder:
        env = os.environ | {TOKEN_ENV: TOKEN, "JOBTRAIL_DB": str(Path(folder) / "ledger.db")}
        submitted = subprocess.run(
            [JOBTRAIL, "submit", str(PROVIDER_FILE), "--body", '{"account": "a"}', "--json"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        op = json.loads(submitted.stdout)["operation_id"]
        bare = timed([sys.executable, "-c", "pass"], env, runs)
        for name, args in (("--version", ["--version"]), ("status OP", ["status", op])):
            seconds = timed([JOBTRAIL, *args], env, runs)
            report.add(
                Figure(
                    name=f"jobtrail {name}, median of {runs}",
                    value=seconds * 1000,
                    unit="ms",
                    baseline=bare * 1000,
                    baseline_name="python -c pass",
                    higher_is_better=False,
                )
            )
    return report
