"""A live SQLite ledger copied with SQLite's online backup API: one consistent snapshot,
including what is only in the -wal file yet (which a plain file copy would miss)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from jobtrail.errors import StoreError


def backup(source: sqlite3.Connection, target: Path) -> tuple[int, int]:
    """Copy `source` into a new file at `target`; returns the copy's (operations, audit
    entries). Runs on the thread that owns `source`."""
    target = target.expanduser()
    if target.exists():
        raise StoreError(f"{target} already exists; a backup never overwrites: name a new file")
    target.parent.mkdir(parents=True, exist_ok=True)
    # Written under a temporary name and renamed once complete and synced, so a file at the
    # destination is always a whole backup.
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        copy = sqlite3.connect(temporary, isolation_level=None)
        try:
            source.backup(copy)  # all pages in one step: one read snapshot of the source
            copy.execute("PRAGMA journal_mode = DELETE")  # one self-contained file
            counts = (
                copy.execute("SELECT count(*) FROM operations").fetchone()[0],
                copy.execute("SELECT count(*) FROM audit_log").fetchone()[0],
            )
        finally:
            copy.close()
        with open(temporary, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)
    folder = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)
    return counts
