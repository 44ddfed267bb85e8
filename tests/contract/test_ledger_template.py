"""The tests' migrated template (tests/stores.py, `migrated_ledger`) is the ledger the
migrations make: a copy has the same tables, columns, indexes, constraints, triggers,
functions and rows as a new ledger migrated from empty, on each store."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import psycopg

from stores import LedgerDb, fresh_ledger, migrated_ledger

PG_CATALOG = {
    "columns": "SELECT table_name, column_name, data_type, column_default, is_nullable "
    "FROM information_schema.columns WHERE table_schema = current_schema() ORDER BY 1, 2",
    "indexes": "SELECT tablename, indexname, indexdef FROM pg_indexes "
    "WHERE schemaname = current_schema() ORDER BY 1, 2",
    "constraints": "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) "
    "FROM pg_constraint WHERE connamespace = current_schema()::regnamespace ORDER BY 1, 2",
    "triggers": "SELECT event_object_table, trigger_name, action_timing, event_manipulation, "
    "action_statement FROM information_schema.triggers "
    "WHERE trigger_schema = current_schema() ORDER BY 1, 2, 4",
    "functions": "SELECT proname, pg_get_functiondef(p.oid) FROM pg_proc p "
    "WHERE pronamespace = current_schema()::regnamespace ORDER BY 1",
    "tables": "SELECT table_name FROM information_schema.tables "
    "WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY 1",
}


async def _described(db: LedgerDb) -> dict[str, Any]:
    """The ledger's schema and rows, with its own schema's name taken out."""
    if db.kind == "sqlite":
        conn = sqlite3.connect(db.url)
        try:
            schema = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY 2")
            found: dict[str, Any] = {"schema": schema.fetchall()}
            tables = [row[1] for row in found["schema"] if row[0] == "table"]
            found["rows"] = {t: _rows(conn.execute(f"SELECT * FROM {t}")) for t in tables}
        finally:
            conn.close()
        return found
    async with await psycopg.AsyncConnection.connect(db.url, autocommit=True) as conn:
        own = str((await (await conn.execute("SELECT current_schema()")).fetchone() or [""])[0])
        found = {}
        for name, sql in PG_CATALOG.items():
            rows = await (await conn.execute(sql.encode())).fetchall()
            found[name] = [tuple(str(v).replace(own, "S") for v in row) for row in rows]
        found["rows"] = {}
        for (table,) in found["tables"]:
            cur = await conn.execute(f"SELECT * FROM {table}".encode())
            found["rows"][table] = _rows(await cur.fetchall())
    return found


def _rows(rows: Any) -> list[tuple[str, ...]]:
    return sorted(tuple(str(v) for v in row) for row in rows)


async def test_a_template_copy_is_the_migrated_ledger(store_kind: str, tmp_path: Path) -> None:
    """A copy of the template and a ledger migrated from empty are the same ledger."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    async with fresh_ledger(store_kind, tmp_path / "a") as empty:
        await (await empty.open()).close()
        migrated = await _described(empty)
    async with migrated_ledger(store_kind, tmp_path / "b") as copy:
        copied = await _described(copy)
        await (await copy.open()).close()  # and it opens as a ledger
    schema = {k: v for k, v in migrated.items() if k != "rows"}
    assert schema == {k: v for k, v in copied.items() if k != "rows"}
    assert len(schema["tables" if store_kind == "postgres" else "schema"]) > 10
    assert migrated["rows"].keys() == copied["rows"].keys()
    for table, rows in migrated["rows"].items():
        if table != "schema_migrations":  # its rows hold when each was applied
            assert rows == copied["rows"][table], table
    applied = [row[0] for row in migrated["rows"]["schema_migrations"]]
    assert applied == [row[0] for row in copied["rows"]["schema_migrations"]] and applied
