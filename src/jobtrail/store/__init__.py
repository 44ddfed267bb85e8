"""Storage behind one small interface (`Store`), with SQLite and PostgreSQL implementations."""

from __future__ import annotations

from jobtrail.store.base import Change, Claim, CommitResult, Lease, Store

__all__ = ["Change", "Claim", "CommitResult", "Lease", "Store", "open_store"]


async def open_store(url: str, *, audit_key: bytes | None = None) -> Store:
    """Open (and migrate) the ledger at `url`: a SQLite path, or a postgresql:// URL."""
    if url.startswith(("postgresql://", "postgres://")):
        from jobtrail.store.postgres import PostgresStore

        return await PostgresStore.open(url, audit_key=audit_key)
    from jobtrail.store.sqlite import SqliteStore

    return await SqliteStore.open(url, audit_key=audit_key)
