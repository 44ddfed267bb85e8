"""The files of a SQLite ledger, watched while a process has them open.

In WAL mode a ledger is three files: the main file, its -wal (the newest commits, until a
checkpoint copies them into the main file) and its -shm (the wal-index every process maps).
While this process holds its connection SQLite never deletes or replaces any of them (only
the last connection to close removes -wal and -shm), so one that goes or changes was removed
under us: our later commits would land in an unlinked file (-wal, main file) or a wal-index
no other process sees (-shm), and be lost while acknowledged. The store checks them before
every write transaction and refuses to go on.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from jobtrail.errors import StoreError

BUSY_TIMEOUT_MS = 30_000
LEDGER_FILES = ("", "-wal", "-shm")
Identities = dict[str, tuple[int, int]]


def identity(path: str) -> tuple[int, int]:
    """The file behind `path` (device, inode), to notice it deleted or replaced later."""
    found = os.stat(Path(path).expanduser())
    return found.st_dev, found.st_ino


def identities(path: str) -> Identities:
    """(device, inode) of each of the ledger's files that exists now, by path."""
    if path == ":memory:":
        return {}
    found = {}
    for suffix in LEDGER_FILES:
        try:
            found[path + suffix] = identity(path + suffix)
        except FileNotFoundError:
            continue
    return found


def check_same_files(known: Identities) -> None:
    """StoreError naming the first of the `known` files deleted or replaced since."""
    for path, was in known.items():
        try:
            now = os.stat(path)
        except FileNotFoundError:
            what = "deleted"
        else:
            if (now.st_dev, now.st_ino) == was:
                continue
            what = "replaced by another file"
        raise StoreError(
            f"the ledger file {path} was {what} while this process had it open; "
            "nothing more is written to it. Restore the ledger (or point JOBTRAIL_DB / "
            "--db at the one in use) and start again"
        )


def connect(path: str, create: bool) -> sqlite3.Connection:
    if path == ":memory:":
        target, uri = path, False
    elif create:
        _refuse_missing_folder(path)
        target, uri = path, False
    elif not Path(path).expanduser().exists():
        raise StoreError(
            f"no ledger at {Path(path).expanduser().absolute()}; `jobtrail submit` or "
            "`jobtrail worker` creates one (or set JOBTRAIL_DB / --db to an existing ledger)"
        )
    else:  # mode=rw: a file that vanishes after the check above is not made again
        target, uri = Path(path).expanduser().absolute().as_uri() + "?mode=rw", True
    conn = sqlite3.connect(
        target,
        isolation_level=None,
        check_same_thread=False,
        timeout=BUSY_TIMEOUT_MS / 1000,
        uri=uri,
    )
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    _wal(conn)
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def _refuse_missing_folder(path: str) -> None:
    """A new ledger is made only in a folder that exists: a mistyped --db would otherwise
    make folders and a new, empty ledger that a worker then idles on."""
    folder = Path(path).expanduser().absolute().parent
    if not folder.is_dir():
        raise StoreError(
            f"no folder {folder} for the ledger {Path(path).expanduser().absolute()}: "
            "jobtrail makes a new ledger file, never its folder; create the folder, or set "
            "JOBTRAIL_DB / --db to the ledger meant"
        )


def _wal(conn: sqlite3.Connection) -> None:
    """Switch to WAL. The switch needs an exclusive lock and SQLite does not wait for it (the
    busy timeout does not apply), so two processes opening a new ledger at once retry here."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode != sqlite3.SQLITE_BUSY or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def split_script(script: str) -> list[str]:
    """Statements of a script; trigger bodies (BEGIN ... END;) stay whole."""
    statements, buffer = [], ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                statements.append(buffer.strip())
            buffer = ""
    return statements
