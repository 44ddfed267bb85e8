"""Where a SQLite store's bytes go: pages per table (its indexes counted with it) from SQLite's
`dbstat`, and the stored value bytes per column. Used by the peer benchmark so that the
bytes-per-operation figure comes with its reason, measured in the same run."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def table_pages(db: Path) -> dict[str, int]:
    """Bytes of the pages of each table, its indexes included, and of the free list."""
    conn = sqlite3.connect(db)
    try:
        schema = "SELECT name, tbl_name FROM sqlite_master WHERE type IN ('table', 'index')"
        owner = dict(conn.execute(schema))
        sizes: dict[str, int] = {}
        for name, size in conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"):
            table = owner.get(name, name)
            sizes[table] = sizes.get(table, 0) + int(size)
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        sizes["(free pages)"] = int(free) * int(page)
    finally:
        conn.close()
    return sizes


def index_pages(db: Path) -> int:
    """Bytes of the pages of all indexes (automatic ones included)."""
    conn = sqlite3.connect(db)
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")]
        marks = ",".join("?" * len(names)) or "''"
        row = conn.execute(f"SELECT sum(pgsize) FROM dbstat WHERE name IN ({marks})", names)
        return int(row.fetchone()[0] or 0)
    finally:
        conn.close()


def column_bytes(db: Path, tables: tuple[str, ...]) -> dict[str, int]:
    """Stored bytes of each `table.column` (values only: no row, page or index overhead)."""
    conn = sqlite3.connect(db)
    try:
        sizes: dict[str, int] = {}
        for table in tables:
            for column in [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]:
                query = f"SELECT coalesce(sum(length(CAST({column} AS BLOB))), 0) FROM {table}"
                sizes[f"{table}.{column}"] = int(conn.execute(query).fetchone()[0])
    finally:
        conn.close()
    return sizes


def rows(db: Path, tables: tuple[str, ...]) -> dict[str, int]:
    conn = sqlite3.connect(db)
    try:
        return {t: int(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]) for t in tables}
    finally:
        conn.close()


def per_op(sizes: dict[str, int], n: int, *, top: int | None = None, floor: float = 0) -> str:
    """`name 1,234` per operation, largest first, as one line."""
    ranked = sorted(((v / n, k) for k, v in sizes.items() if v / n >= floor), reverse=True)
    return ", ".join(f"{k} {v:,.0f}" for v, k in ranked[:top])
