"""`import jobtrail` stays cheap: the public names are there, and the client's heavy
dependencies load only when the client is first used (checked in a fresh interpreter)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("aiohttp", "psycopg", "psycopg_pool", "jsonschema", "rich", "click", "opentelemetry")

PROBE = """
import json, sys
import jobtrail
before = sorted({m.split('.')[0] for m in sys.modules})
names = {n: hasattr(jobtrail, n) for n in jobtrail.__all__}
client = jobtrail.Client
after = sorted({m.split('.')[0] for m in sys.modules})
print(json.dumps({"before": before, "after": after, "names": names,
                  "version": jobtrail.__version__}))
"""


def probe() -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60
    )
    found: dict[str, object] = json.loads(done.stdout)
    return found


def test_import_jobtrail_loads_no_heavy_dependency() -> None:
    """`import jobtrail` imports none of aiohttp, psycopg and the like; the first access to
    `jobtrail.Client` imports aiohttp."""
    found = probe()
    before, after = set(found["before"]), set(found["after"])  # type: ignore[call-overload]
    assert before.isdisjoint(HEAVY), sorted(before & set(HEAVY))
    assert "aiohttp" in after  # psycopg only once a postgresql:// ledger is opened


def test_every_public_name_resolves() -> None:
    """Every name in `jobtrail.__all__` exists, and `__version__` is the package's."""
    from importlib.metadata import version

    found = probe()
    assert all(found["names"].values())  # type: ignore[attr-defined]
    assert found["version"] == version("jobtrail")
