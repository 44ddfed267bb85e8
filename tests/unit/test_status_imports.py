"""`jobtrail status OP` on a SQLite ledger loads what reading one record needs and nothing
more (issue 24, start-up): checked as the set of modules a fresh interpreter holds after
the command, not as a time. The record it shows is the one the store reads, and a ledger it
cannot read as it is (an older schema) is still shown, by opening it the usual way."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from jobtrail.ledger import open_ledger
from jobtrail.ledger.peek import read_record

ROOT = Path(__file__).resolve().parents[2]
JOBTRAIL = str(Path(sys.executable).with_name("jobtrail"))

# What a status read must not load: the providers (their credentials, their files' parser,
# the HTTP client), the ledger's writing side, the store (its writer thread), the result
# store, the worker, and the event loop with its thread pool.
FORBIDDEN = (
    "jobtrail.providers",
    "jobtrail.ledger.ledger",
    "jobtrail.ledger.asking",
    "jobtrail.ledger.common",
    "jobtrail.ledger.deciding",
    "jobtrail.ledger.driving",
    "jobtrail.ledger.redaction",
    "jobtrail.ledger.opening",
    "jobtrail.store.sqlite",
    "jobtrail.store.postgres",
    "jobtrail.store.chain",
    "jobtrail.results",
    "jobtrail.worker",
    "jobtrail.services.runtime",
    "jobtrail.core.apply",
    "asyncio",
    "concurrent.futures",
    "aiohttp",
    "psycopg",
    "rich",
)

PROBE = """
import json, sys
sys.argv = ["jobtrail", "status", sys.argv[1]]
from jobtrail.cli.main import main
try:
    main()
except SystemExit as exc:
    assert not exc.code, exc.code
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def _ledger(folder: Path) -> tuple[dict[str, str], str]:
    env = {
        "PATH": str(Path(sys.executable).parent),
        "JOBTRAIL_DB": str(folder / "ledger.db"),
        "REPORTS_API_TOKEN": "t",
        "HOME": str(folder),
    }
    provider = str(ROOT / "providers" / "simulator.toml")
    submitted = subprocess.run(
        [JOBTRAIL, "submit", provider, "--body", '{"account": "a"}', "--key", "k1", "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return env, json.loads(submitted.stdout)["operation_id"]


def _status_modules(env: dict[str, str], ref: str) -> tuple[str, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, ref],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout, set(json.loads(done.stderr.strip().splitlines()[-1]))


def _loaded(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == f or m.startswith(f + ".") for f in FORBIDDEN))


def test_status_imports_none_of_the_writing_side(tmp_path: Path) -> None:
    env, op = _ledger(tmp_path)
    shown, modules = _status_modules(env, op)
    assert op in shown and "create_pending" in shown  # the record itself was read
    assert _loaded(modules) == []
    shown, modules = _status_modules(env, "k1")  # by its key, the same way
    assert op in shown and _loaded(modules) == []


async def test_the_record_read_as_it_is_equals_the_stores(tmp_path: Path) -> None:
    env, op = _ledger(tmp_path)
    found = read_record(env["JOBTRAIL_DB"], op)
    assert found is not None and found.operation is not None
    ledger = await open_ledger(env["JOBTRAIL_DB"], create=False)
    try:
        assert found.operation == await ledger.find(op)
        assert found.attempts == await ledger.attempts(op)
        assert found.observations == await ledger.observations(op)
    finally:
        await ledger.close()
    missing = read_record(env["JOBTRAIL_DB"], "no-such-operation")
    assert missing is not None and missing.operation is None


def test_a_ledger_at_another_schema_is_opened_the_usual_way(tmp_path: Path) -> None:
    """A ledger whose schema is not this jobtrail's is not read as it is (its tables may
    mean other things): `status` opens it as a store, which migrates an older one and
    refuses a newer one with its reason."""
    env, op = _ledger(tmp_path)
    with sqlite3.connect(env["JOBTRAIL_DB"]) as db:
        db.execute("INSERT INTO schema_migrations VALUES (9999, '2099-01-01T00:00:00Z')")
    assert read_record(env["JOBTRAIL_DB"], op) is None
    done = subprocess.run(
        [JOBTRAIL, "status", op], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1 and op not in done.stdout
    assert "migrated by a newer jobtrail (schema 9999" in done.stderr
