"""Stored bytes per table, for the peer benchmarks: on SQLite the pages of each table (its
indexes counted with it, SQLite's `dbstat`) after a WAL checkpoint, plus files kept beside
the database (jobtrail's result files); on PostgreSQL `pg_total_relation_size` of each table
(heap, indexes and TOAST) after `VACUUM FULL`, so dead row versions left by updates are not
counted, plus the whole database's growth as left (before the VACUUM). Each is measured
empty (after the side's set-up) and after the run; the figures are the differences."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg

from bench import breakdown

RESULT_FILES = "(result files)"
AS_LEFT = "(database as left, before VACUUM)"
DB_FILES = "(database files in all)"


def sqlite_tables(db: Path, *extra: Path) -> dict[str, int]:
    """Bytes by table of a SQLite database (checkpointed first), the free list, the file and
    its WAL in all, and the files under `extra`."""
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    sizes = breakdown.table_pages(db)
    sizes[DB_FILES] = sum(p.stat().st_size for p in db.parent.glob(db.name + "*") if p.is_file())
    files = [p for folder in extra if folder.exists() for p in folder.rglob("*") if p.is_file()]
    sizes[RESULT_FILES] = sum(p.stat().st_size for p in files)
    return sizes


def pg_tables(url: str, *extra: Path, vacuum: bool = True) -> dict[str, int]:
    """Bytes by table (schema-qualified when not `public`) of a PostgreSQL database, with
    `AS_LEFT` the database's size before the VACUUM FULL."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
        as_left = int(row[0]) if row else 0
        tables = conn.execute(
            "SELECT n.nspname, c.relname FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema') "
            "AND n.nspname NOT LIKE 'pg_toast%'"
        ).fetchall()
        sizes: dict[str, int] = {}
        for schema, table in tables:
            name = f'"{schema}"."{table}"'
            if vacuum:
                conn.execute(f"VACUUM FULL {name}")
            row = conn.execute("SELECT pg_total_relation_size(%s::regclass)", (name,)).fetchone()
            sizes[table if schema == "public" else f"{schema}.{table}"] = int(row[0]) if row else 0
    sizes[AS_LEFT] = as_left
    files = [p for folder in extra if folder.exists() for p in folder.rglob("*") if p.is_file()]
    sizes[RESULT_FILES] = sum(p.stat().st_size for p in files)
    return sizes


def grown(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    """What each entry grew by (entries only in `after` count whole)."""
    return {k: v - before.get(k, 0) for k, v in after.items()}


def stored(sizes: dict[str, int]) -> int:
    """The bytes a side stores, from its growth by table: the tables (or the SQLite files in
    all, which include the free list) plus result files."""
    if DB_FILES in sizes:
        return sizes[DB_FILES] + sizes.get(RESULT_FILES, 0)
    summary = (AS_LEFT, RESULT_FILES)
    return sum(v for k, v in sizes.items() if k not in summary) + sizes.get(RESULT_FILES, 0)
