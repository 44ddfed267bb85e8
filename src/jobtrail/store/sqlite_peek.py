"""One operation's record read from a SQLite ledger without the store's machinery: no
writer thread, no event loop, no migration. What `jobtrail status` reads, in a fresh process
that should cost little more than Python's own start-up (bench/startup.py).

The file is opened read-only (`mode=ro`: nothing is created or written, not even a missing
-shm), and only a ledger whose schema is exactly the one this jobtrail ships is read here:
an older one (not yet migrated) or a newer one answers None, and the caller opens the ledger
the usual way, which migrates it or refuses it with its reason. Rows are decoded by the same
codec and queries as the store's (sqlite.py), so a record reads the same either way.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from jobtrail.core.model import Attempt, Observation, Operation
from jobtrail.store import codec as c
from jobtrail.store.migrations import migrations
from jobtrail.store.queries import load_queries
from jobtrail.store.text import sqlite_moment, sqlite_time


@dataclass(frozen=True)
class Peeked:
    """An operation's record, or (`operation` None) that the ledger holds no such one."""

    operation: Operation | None
    attempts: list[Attempt]
    observations: list[Observation]


_CODEC = c.Codec(c.LastOne(sqlite_time), sqlite_moment)
_FILL = {
    "columns": ", ".join(c.COLUMNS),
    "values": ", ".join(":" + col for col in c.COLUMNS),
    "store_decided": ", ".join(c.STORE_DECIDED),
    "operation": c.selected(),
}


def peek(path: str, ref: str) -> Peeked | None:
    """The operation whose id, else key, is `ref`, with its attempts and observations; None
    when this read cannot be made here (no such file, a schema other than this jobtrail's,
    any SQLite error): the caller then opens the ledger as a store."""
    file = Path(path).expanduser()
    if path == ":memory:" or not file.is_file():
        return None
    try:
        conn = sqlite3.connect(file.absolute().as_uri() + "?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        conn.row_factory = sqlite3.Row
        applied = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
        if applied != {version for version, _ in migrations("sqlite")}:
            return None
        q = load_queries("sqlite", fill=_FILL)
        conn.execute("BEGIN")  # one snapshot: the record and its facts as of one moment
        row = conn.execute(q["get"], (ref,)).fetchone()
        if row is None:
            row = conn.execute(q["get_by_key"], (c.storable(ref),)).fetchone()
        if row is None:
            return Peeked(operation=None, attempts=[], observations=[])
        op = _CODEC.operation(row)
        ident = (op.operation_id,)
        attempts = [_CODEC.attempt(r) for r in conn.execute(q["attempts"], ident)]
        seen = [_CODEC.observation(r) for r in conn.execute(q["observations"], ident)]
        return Peeked(operation=op, attempts=attempts, observations=seen)
    except sqlite3.Error:
        return None
    finally:
        conn.close()
