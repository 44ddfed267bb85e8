"""What the store's algorithms see (store/engine.py, commit.py, prune.py, notices.py): one
connection inside a read or a write (`Conn`), the hooks of the store they run for (`Hooks`,
the base of `Store`) with the audit chain's step that ends every write, and `run_sync`,
which runs them over a connection that never suspends (SQLite's writer thread)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Coroutine, Sequence
from datetime import datetime
from typing import Any, ClassVar, Protocol, TypeVar

from jobtrail.core.audit import AuditEntry
from jobtrail.errors import StoreError
from jobtrail.store import codec as c
from jobtrail.store.chain import WRITE, AuditChain
from jobtrail.store.changes import Change

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


class Hooks(ABC):
    """What a dialect (store/sqlite.py, postgres.py) supplies to the algorithms written once
    (`Store` in store/engine.py, and commit.py, prune.py, notices.py): its queries (one dict,
    the same names in both; prune's apart), codec and positional placeholder, how it runs a
    read and a write transaction, passes an array, reads a lease clock and guards one
    change's update. A dialect defines these, the abstract verbs of `Store` (its clock,
    leases and closing) and its own plumbing, nothing else (tests/unit/test_store_engine.py).
    """

    Q: ClassVar[dict[str, str]]
    Q_PRUNE: ClassVar[dict[str, str]]
    CODEC: ClassVar[c.Codec]
    MARK: ClassVar[str]
    _chain: AuditChain

    @abstractmethod
    async def _read(self, work: Work[T]) -> T:
        """Run `work` in one read."""

    @abstractmethod
    async def _write(self, work: Work[T], *, sync: bool = True) -> T:
        """Run `work` in one write transaction, refused when this store's audit key cannot
        continue the chain; `sync=False` may commit without waiting for the disk."""

    @abstractmethod
    def array(self, values: Sequence[Any]) -> Any:
        """One parameter holding a list (PostgreSQL: an array; SQLite: JSON for json_each)."""

    @abstractmethod
    def lease_clock(self) -> float | None:
        """The lease clock's reading as a parameter, or None when the SQL reads the clock."""

    @abstractmethod
    def ledger_now(self) -> datetime:
        """The time on the ledger's clock (store/ledger_clock.py): PostgreSQL's server clock,
        or on SQLite the machine's wall clock as every process on it reads it alike. Every
        judgment of time that decides safety or an end is made on it, never on a worker's
        own clock."""

    @abstractmethod
    def update_statement(self, change: Change) -> tuple[str, Any]:
        """The guarded update of one change: (statement, parameters)."""

    # -- the audit chain's step, which every write ends with ------------------------------

    async def _append_audit(
        self, conn: Conn, entries: Sequence[AuditEntry], texts: Sequence[tuple[Any, str]] = ()
    ) -> None:
        """Link `entries` (or their canonical `texts`, encoded by the caller) to the chain's
        head. Called last in a transaction: where the head is a locked row, the lock is
        held only from here to the commit."""
        if not entries and not texts:
            return
        head = first(await conn.rows(self.Q["audit_head"]))
        if not self._chain.agreed:  # under the write lock: one first writer fixes the keying
            await self._check_keying(conn, fix=True)
        seq, prev = (head["seq"], head["hash"]) if head else (0, None)
        texts = [*texts, *((e.operation_id, e.canonical()) for e in entries)]
        rows = self._chain.stored(self._chain.extend_texts(seq, prev, texts))
        writes: list[tuple[str, Sequence[Any]]] = [(self.Q["insert_audit"], rows)]
        if moved := self.Q.get("move_audit_head"):  # a dialect whose head is a row of its own
            writes.append((moved, [(rows[-1][0], rows[-1][4])]))
        await conn.many(writes)

    async def _keying(
        self, conn: Conn, act: str = WRITE
    ) -> tuple[str | None, tuple[bool, str | None], bool]:
        """This store's key judged against the chain (store/chain.py): (problem, the
        keying row, whether the ledger holds that row already)."""
        keying = first(await conn.rows(self.Q["audit_keying"]))
        head = None if keying else first(await conn.rows(self.Q["audit_head_entry"]))
        stored = (keying["keyed"], keying["key_check"]) if keying else None
        entry = (head["prev_hash"], head["entry"], head["hash"]) if head else None
        problem, row = self._chain.judge(stored, entry, act)
        return problem, row, stored is not None

    async def _check_keying(self, conn: Conn, *, fix: bool) -> None:
        """Refuse unless this store's key continues the chain; with `fix`, write the
        keying row when the chain has none yet."""
        problem, row, stored = await self._keying(conn)
        if problem is not None:
            raise StoreError(problem)
        if stored:
            self._chain.agreed = True
        elif fix:
            await conn.count(self.Q["insert_audit_keying"], row)
