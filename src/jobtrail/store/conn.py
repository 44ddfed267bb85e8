"""What the store's algorithms see (store/engine.py, commit.py, prune.py): one connection
inside a read or a write (`Conn`), the store they run for (`Engine`), and `run_sync`, which
runs them over a connection that never suspends (SQLite's writer thread)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from typing import Any, ClassVar, Protocol, TypeVar

from jobtrail.core.audit import AuditEntry
from jobtrail.store import codec as c
from jobtrail.store.leases import Lease

T = TypeVar("T")


class Conn(Protocol):
    """One connection inside a read or a write, as the algorithms see it."""

    async def rows(self, sql: str, args: Any = None) -> list[Any]:
        """The statement's rows (none for a statement without a result)."""

    async def count(self, sql: str, args: Any = None) -> int:
        """The number of rows the statement changed."""

    async def each(self, statements: Sequence[tuple[str, Any]]) -> list[Any | None]:
        """Each statement's first row, or None: one round trip where the dialect can."""

    async def many(self, writes: Sequence[tuple[str, Sequence[Any]]]) -> None:
        """Each (statement, rows of parameters), in order, without results."""


Work = Callable[[Conn], Coroutine[Any, Any, T]]


def run_sync(work: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never suspends (the algorithms over a blocking `Conn`)."""
    try:
        work.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    work.close()
    raise RuntimeError("a store algorithm waited on a blocking connection")


def first(rows: list[T]) -> T | None:
    return rows[0] if rows else None


class Engine(Protocol):
    """The store an algorithm runs for: its queries, codec and hooks (EngineStore)."""

    Q: ClassVar[dict[str, str]]
    Q_PRUNE: ClassVar[dict[str, str]]
    CODEC: ClassVar[c.Codec]

    def array(self, values: Sequence[Any]) -> Any: ...

    def lease_clock(self) -> float | None: ...

    def _lease(self, row: Any) -> Lease: ...

    async def _append_audit(
        self, conn: Conn, entries: Sequence[AuditEntry], texts: Sequence[tuple[Any, str]] = ()
    ) -> None: ...
