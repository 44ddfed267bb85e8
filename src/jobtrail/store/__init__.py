"""Storage behind one small interface (`Store`), with SQLite and PostgreSQL implementations."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from jobtrail.errors import StoreError
from jobtrail.store.urls import shown_url

if TYPE_CHECKING:
    from jobtrail.store.changes import Change, Claim, CommitResult
    from jobtrail.store.engine import Store
    from jobtrail.store.leases import Lease

__all__ = ["Change", "Claim", "CommitResult", "Lease", "Store", "open_store", "shown_url"]

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


async def open_store(url: str, *, audit_key: bytes | None = None, create: bool = True) -> Store:
    """Open (and migrate) the ledger at `url`: a SQLite path, or a postgresql:// URL.

    With `create` False (every command that only reads or decides), a SQLite file that does
    not exist is an error rather than a new, empty ledger that would answer "nothing here".
    """
    if url.startswith(("postgresql://", "postgres://")):
        from jobtrail.store.postgres import PostgresStore

        return await PostgresStore.open(url, audit_key=audit_key)
    if _SCHEME.match(url):  # never a file named "mysql:" with the URL as folders below it
        raise StoreError(
            f"unknown ledger URL {shown_url(url)}: a ledger is a SQLite file path or a "
            "postgresql://user@host/dbname URL; set JOBTRAIL_DB / --db to one of those"
        )
    from jobtrail.store.sqlite import SqliteStore

    return await SqliteStore.open(url, audit_key=audit_key, create=create)


def __getattr__(name: str) -> Any:
    """The interface's names, imported on first use: `jobtrail.store.urls` (masking a
    ledger URL, which every command does) must not load the record types."""
    if name in {"Change", "Claim", "CommitResult"}:
        from jobtrail.store import changes

        return getattr(changes, name)
    if name in {"Lease", "Store"}:
        from jobtrail.store import engine

        return getattr(engine, name)
    raise AttributeError(f"module 'jobtrail.store' has no attribute {name!r}")
