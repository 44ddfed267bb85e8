"""Opening a ledger on its database (a SQLite path or a postgresql:// URL), and the store's
words services and surfaces need (query and page types, verdicts, leases, the display of a
database URL): the store itself stays private to the ledger."""

from __future__ import annotations

from typing import Any

from jobtrail.ledger.ledger import Ledger
from jobtrail.store import open_store


async def open_ledger(
    url: str, *, audit_key: bytes | None = None, create: bool = True, **options: Any
) -> Ledger:
    """The ledger on `url`, migrated; `create` False refuses a SQLite file that is not there
    (a mistyped path never leaves an empty ledger behind). Close it with `Ledger.close`."""
    store = await open_store(url, audit_key=audit_key, create=create)
    return Ledger(store, **options)
