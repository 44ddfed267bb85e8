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
from pathlib import Path

from jobtrail.errors import StoreError

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
