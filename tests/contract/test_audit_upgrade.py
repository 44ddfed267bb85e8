"""A ledger written before migration 0017 (schema 0016: hashes as hex text, audit entries
copying each attempt's request and detail) is upgraded on open and keeps verifying: its old
entries with the old format, the entries written after the upgrade with the new one (hashes
as bytes, attempts bound by hash), one chain across both; a tamper of either kind is still
named. The old ledger is the rows the pre-0017 code wrote (tests/contract/ledger_0016/), laid
into a database migrated only up to 0016."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from retention_records import ledger_at, succeeded, tamper

from jobtrail.cli.main import cli
from jobtrail.store import migrations as migrations_module
from jobtrail.store import postgres, sqlite

from stores import LedgerDb

FIXTURES = Path(__file__).parent / "ledger_0016"
# Rows go in parents first; PostgreSQL's generated keys are given as the old code stored them.
ORDER = ("provider_configs", "operations", "transitions", "attempts", "observations", "leases")
ORDER += ("audit_log", "audit_keying")


def _up_to_0016(dialect: str) -> list[tuple[int, str]]:
    return [(v, sql) for v, sql in migrations_module.migrations(dialect) if v <= 16]


async def _old_ledger(db: LedgerDb, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """`db` at schema 0016 holding the fixture's rows; returns the fixture."""
    with monkeypatch.context() as patch:
        patch.setattr(sqlite, "migrations", _up_to_0016)
        patch.setattr(postgres, "migrations", _up_to_0016)
        async with db.opened():
            pass
    tables: dict[str, Any] = json.loads((FIXTURES / f"{db.kind}.json").read_text())
    if db.kind == "sqlite":
        conn = sqlite3.connect(db.url)
        with conn:
            for table in ORDER:
                info = conn.execute(f"PRAGMA table_xinfo({table})").fetchall()
                generated = {c[1] for c in info if c[6] != 0}  # hidden: generated columns
                for row in tables[table]:
                    row = {k: v for k, v in row.items() if k not in generated}
                    names = ", ".join(row)
                    marks = ", ".join(f":{k}" for k in row)
                    conn.execute(f"INSERT INTO {table} ({names}) VALUES ({marks})", row)
        conn.close()
        return tables
    async with await psycopg.AsyncConnection.connect(db.url) as pg:
        for table in ORDER:
            cur = await pg.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = %s "
                "AND table_schema = current_schema() AND is_generated = 'NEVER'",
                (table,),
            )
            names = ", ".join(r[0] for r in await cur.fetchall())
            for row in tables[table]:
                insert = (
                    f"INSERT INTO {table} ({names}) OVERRIDING SYSTEM VALUE "
                    f"SELECT {names} FROM json_populate_record(NULL::{table}, %s)"
                )
                await pg.execute(insert.encode(), (json.dumps(row),))
        for table, column in (("transitions", "seq"), ("attempts", "seq"), ("observations", "id")):
            await pg.execute(  # as the old code left them: past the rows it wrote
                f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), "  # type: ignore[arg-type]
                f"(SELECT max({column}) FROM {table}))"
            )
        (head,) = tables["audit_head"]
        await pg.execute("UPDATE audit_head SET seq = %s, hash = %s", (head["seq"], head["hash"]))
    return tables


async def _verify(db: LedgerDb) -> tuple[int, str]:
    env = {"JOBTRAIL_DB": db.url, "JOBTRAIL_AUDIT_KEY": None}
    runner = CliRunner()
    done = await asyncio.to_thread(
        runner.invoke, cli, ["audit", "verify", "--replay"], env=env, catch_exceptions=False
    )
    return done.exit_code, done.output


async def test_an_old_ledger_verifies_after_the_upgrade_and_after_new_entries(
    ledger_db: LedgerDb, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = await _old_ledger(ledger_db, monkeypatch)
    copied = [e for e in old["audit_log"] if '"kind":"attempt.intent"' in e["entry"]]
    assert copied and all('"request":' in e["entry"] for e in copied)  # the old format
    assert all(len(e["hash"]) == 64 for e in old["audit_log"])  # hex text
    n = len(old["audit_log"])
    code, said = await _verify(ledger_db)  # upgraded to 0017 on open
    assert code == 0 and f"audit log intact: {n} entries" in said, said
    async with ledger_db.opened() as store:
        ledger, _ = ledger_at(store)
        new = await succeeded(ledger, 4)
        rows = await store.audit_rows()
        fresh = [r for r in rows if r.columns.get("operation_id") == new.operation_id]
    assert [r.seq for r in rows[:n]] == [e["seq"] for e in sorted(old["audit_log"], key=_seq)]
    assert rows[n].prev_hash == max(old["audit_log"], key=_seq)["hash"]  # one chain
    intents = [r.entry for r in fresh if '"kind":"attempt.intent"' in r.entry]
    assert intents and all('"request_sha256":' in e and '"request":' not in e for e in intents)
    steps = [r.entry for r in fresh if '"kind":"transition"' in r.entry]
    assert steps and all('"step_sha256":' in e and '"cause":' not in e for e in steps)
    runs = [r.entry for r in fresh if '"kind":"observation.run"' in r.entry]
    assert runs and all('"run_sha256":' in e and '"last_seen":' not in e for e in runs)
    code, said = await _verify(ledger_db)
    assert code == 0 and f"audit log intact: {len(rows)} entries" in said, said
    assert len(rows) > n
    stored = await _stored_hashes(ledger_db)
    assert all(isinstance(h, bytes) and len(h) == 32 for h in stored[n:])  # the new format
    old_kept = str if ledger_db.kind == "sqlite" else bytes  # PostgreSQL converted them
    assert all(isinstance(h, old_kept) for h in stored[:n])
    # A tamper of an old entry is still named, and of a new attempt row too.
    await tamper(
        ledger_db,
        "attempts",
        "UPDATE attempts SET detail = '{\"n\":9}' WHERE operation_id = "
        f"'{new.operation_id}' AND kind = 'create'",
    )
    await tamper(
        ledger_db,
        "audit_log",
        "UPDATE audit_log SET entry = replace(entry, 'worker:a', 'worker:z') WHERE seq = 2",
    )
    code, said = await _verify(ledger_db)
    assert code == 1
    assert "entry #2 was edited" in said, said
    assert "its detail column is not what audit entry" in said, said


def _seq(row: dict[str, Any]) -> int:
    return int(row["seq"])


async def _stored_hashes(db: LedgerDb) -> list[Any]:
    if db.kind == "sqlite":
        conn = sqlite3.connect(db.url)
        try:
            return [r[0] for r in conn.execute("SELECT hash FROM audit_log ORDER BY seq")]
        finally:
            conn.close()
    async with await psycopg.AsyncConnection.connect(db.url) as pg:
        cur = await pg.execute("SELECT hash FROM audit_log ORDER BY seq")
        return [r[0] for r in await cur.fetchall()]
