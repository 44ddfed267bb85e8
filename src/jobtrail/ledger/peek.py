"""Reading one operation's record the cheapest way there is: a SQLite ledger read without
opening it as a store (jobtrail.store.sqlite_peek), for `jobtrail status` in a fresh
process. Importing this loads none of the ledger's writing side, no provider, no result
store and no event loop (tests/unit/test_status_imports.py holds that)."""

from __future__ import annotations

from jobtrail.store.sqlite_peek import Peeked, peek

__all__ = ["Peeked", "read_record"]


def read_record(url: str, ref: str) -> Peeked | None:
    """The operation `ref` names (its id, else its key) with its attempts and observations,
    or a Peeked without one when the ledger holds none; None when it cannot be read this way
    (PostgreSQL, a ledger not at this jobtrail's schema, no such file): open the ledger."""
    if url.startswith(("postgresql://", "postgres://")):
        return None
    return peek(url, ref)
