"""The store: its interface and algorithms, written once for both dialects.

`Store` is the interface everything types against, and implements its verbs over a small
connection interface (`Conn`: rows, count, each, many) and a few hooks that a dialect
supplies (store/conn.py `Hooks`, abstract there): how it runs a read and a write
transaction, how it passes an array, which clock a lease row is read on, the guarded update
of one change. The verbs a dialect writes itself are abstract here: its clock, closing, and
its claim/renew/release statements (SQLite has no data-modifying CTE, so those are shaped
differently). The SQL lives in `sql/<dialect>/*.sql` under the same query names in both
dialects.

The algorithms are coroutines: PostgreSQL awaits them on a pooled connection; SQLite runs
them on its writer thread with `run_sync` (its `Conn` never suspends), so the same code
serves a blocking and an asynchronous driver, as dbos-transact-py's one SQL path serves its
two databases.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Collection, Sequence
from datetime import datetime, timedelta
from functools import partial
from typing import Any, TypeVar

from jobtrail.core.audit import AuditEntry, AuditRow, audit_row
from jobtrail.core.bulk import BulkRecord
from jobtrail.core.model import Attempt, Observation, Operation, Transition
from jobtrail.core.states import State
from jobtrail.core.tasks import TaskHandle
from jobtrail.errors import LedgerBusy, StoreError
from jobtrail.store import codec as c
from jobtrail.store.bulk import bulk_record, bulk_row
from jobtrail.store.chain import VERIFY
from jobtrail.store.changes import Change, Claim, CommitResult
from jobtrail.store.commit import Batch, Prepared, prepare
from jobtrail.store.conn import Conn, first
from jobtrail.store.finding import OperationPage, OperationQuery, where
from jobtrail.store.group import Grouped
from jobtrail.store.leases import Lease
from jobtrail.store.notices import NoticeVerbs
from jobtrail.store.prune import dictionaries, packed, prune
from jobtrail.store.retention import Bind, Keep, PackDictionary, Pruned, Seal
from jobtrail.store.seen import SeenVerbs
from jobtrail.store.tasks import task_handle, task_row

T = TypeVar("T")
# A create as queued: the record, its encoded row and provider document, its audit texts.
_Create = tuple[Operation, dict[str, Any], tuple[str, str], tuple[tuple[Any, str], ...]]


class Store(NoticeVerbs, SeenVerbs):
    """Durable home of operations, their history, attempts, observations, leases and audit:
    the store's interface, and its verbs written once over the hooks a dialect supplies
    (store/conn.py `Hooks`). Every dialect passes tests/contract."""

    _creates: Grouped[_Create, Operation] | None = None

    # -- reads -------------------------------------------------------------------------

    async def _select(self, name: str, args: Any, convert: Callable[[Any], T]) -> list[T]:
        sql = self.Q[name]

        async def run(conn: Conn) -> list[T]:
            return [convert(row) for row in await conn.rows(sql, args)]

        return await self._read(run)

    async def _operation(self, name: str, *args: Any) -> Operation | None:
        return first(await self._select(name, args, self.CODEC.operation))

    async def get(self, operation_id: str) -> Operation | None:
        return await self._operation("get", operation_id)

    async def get_by_key(self, key: str) -> Operation | None:
        return await self._operation("get_by_key", c.storable(key))

    async def find_by_remote_job(self, provider: str, remote_job_id: str) -> Operation | None:
        """The operation that holds this provider's remote job (the newest, should two
        claim it), or None: how a webhook event finds its operation."""
        return await self._operation("find_by_remote_job", provider, c.storable(remote_job_id))

    async def list_operations(
        self, *, states: Sequence[State] = (), limit: int = 50
    ) -> list[Operation]:
        """Newest first."""
        if states:
            args = (self.array([s.value for s in states]), limit)
            return await self._select("list_in_states", args, self.CODEC.operation)
        return await self._select("list", (limit,), self.CODEC.operation)

    async def count_by_state(self) -> dict[State, int]:
        rows = await self._select("count_by_state", None, lambda row: row)
        return {State(row["state"]): row["n"] for row in rows}

    async def find_operations(self, query: OperationQuery) -> OperationPage:
        """One page of the operations matching `query`, newest first, and how many match
        in all (for people: the dashboard's filters and paging)."""
        clause, args = where(query, self.MARK, self.CODEC.t_out)

        async def run(conn: Conn) -> OperationPage:
            (counted,) = await conn.rows(self.Q["count_found"].format(clause=clause), args)
            rows = await conn.rows(
                self.Q["find"].format(clause=clause), [*args, query.limit, query.offset]
            )
            ops = [self.CODEC.operation(row) for row in rows]
            return OperationPage(operations=ops, total=counted["n"])

        return await self._read(run)

    async def history(self, operation_id: str) -> list[Transition]:
        return await self._select("history", (operation_id,), self.CODEC.transition)

    async def attempts(self, operation_id: str) -> list[Attempt]:
        return await self._select("attempts", (operation_id,), self.CODEC.attempt)

    async def observations(self, operation_id: str) -> list[Observation]:
        return await self._select("observations", (operation_id,), self.CODEC.observation)

    async def leases(self, operation_id: str | None = None) -> list[Lease]:
        if operation_id:
            return await self._select("leases_of", (operation_id,), self.CODEC.lease)
        return await self._select("leases", None, self.CODEC.lease)

    async def next_due(self, code: Collection[str] | None = None) -> datetime | None:
        """The earliest time any operation becomes due (poll time, or lease expiry while
        leased), or None; with `code`, only among the operations `claim_due` would claim
        with it."""
        if code is None:
            rows = await self._select("next_due", None, lambda row: row["due"])
        else:
            rows = await self._select(
                "next_due_drives", (self.array(list(code)),), lambda row: row["due"]
            )
        return self.CODEC.t_in(first(rows))

    async def audit_rows(self, operation_id: str | None = None) -> list[AuditRow]:
        if operation_id:
            return await self._select("audit_rows_of", (operation_id,), audit_row)
        return await self._select("audit_rows", None, audit_row)

    async def task(self, task_hash: str) -> TaskHandle | None:
        """The task handle whose id hashes to `task_hash`, expired or not, or None."""
        found = await self._select("get_task", (task_hash,), lambda r: task_handle(self.CODEC, r))
        return first(found)

    async def bulk(self, bulk_id: str) -> BulkRecord | None:
        found = await self._select("get_bulk", (bulk_id,), lambda r: bulk_record(self.CODEC, r))
        return first(found)

    # -- writes ------------------------------------------------------------------------

    async def create_operation(self, op: Operation, audit: Sequence[AuditEntry]) -> Operation:
        """Insert a new operation; if its key exists, return the existing one unchanged.
        Creates share a transaction as the changes do (store/group.py), each encoded here,
        by its caller, before it is queued."""
        if self._creates is None:
            self._creates = Grouped(self._create_all)
        row = self.CODEC.operation_row(op)
        config = c.keyed_config(row)
        texts = tuple((entry.operation_id, entry.canonical()) for entry in audit)
        return await self._creates.submit((op, row, config, texts))

    async def _create_all(self, creates: Sequence[_Create]) -> list[Operation | Exception]:
        """One transaction for all of `creates`; should it be refused, each in its own, so
        that only the create refused fails."""
        try:
            return list(await self._write(partial(self._create, creates)))
        except LedgerBusy:
            raise  # the whole ledger is busy, not one create: one by one would wait N times
        except StoreError:
            if len(creates) == 1:
                raise
        done: list[Operation | Exception] = []
        for one in creates:
            try:
                done += await self._write(partial(self._create, [one]))
            except StoreError as exc:
                done.append(exc)
        return done

    async def _create(self, creates: Sequence[_Create], conn: Conn) -> list[Operation]:
        Q, codec = self.Q, self.CODEC
        made: list[Operation] = []
        texts: list[tuple[Any, str]] = []
        for op, row, config, audit in creates:
            if found := first(await conn.rows(Q["get_by_key"], (c.storable(op.key),))):
                made.append(codec.operation(found))
                continue
            await conn.count(Q["insert_config"], config)
            if not await conn.rows(Q["insert_operation"], row):  # another writer's, meanwhile
                (found,) = await conn.rows(Q["get_by_key"], (c.storable(op.key),))
                made.append(codec.operation(found))
                continue
            made.append(op)
            texts += audit
        await self._append_audit(conn, (), texts)
        return made

    def prepare(self, change: Change) -> Prepared:
        """`change` encoded for the writer (rows, audit texts): the caller's work, before it
        queues the change, so the writer only executes (store/group.py calls it)."""
        return prepare(change, self.CODEC, self.update_statement(change))

    async def commit(self, changes: Sequence[Change]) -> list[CommitResult]:
        """Apply many operations' changes in one transaction (group commit), each guarded
        by its version (and fence); a refused change writes nothing but, for a fenced-out
        owner, the finished attempt and its outcome's audit entry, which are facts
        regardless (a fenced-out safe read had no effect and leaves nothing):
        store/changes.py `refusal`, `kept_when_refused` and `audited`. A transaction retried
        after a deadlock starts from nothing of its first try.

        Observation runs: a change that records anything but a folded read (an observation
        that does not fold, an attempt, a transition) closes the operation's open run first,
        and the run is sealed by an `observation.run` audit entry with its final values; a
        status run is also closed when the change ends automation for the operation."""
        if not changes:
            return []
        prepared = [ch if isinstance(ch, Prepared) else self.prepare(ch) for ch in changes]
        # A new Batch for every try: a transaction retried after a deadlock must not carry
        # the seals, verdicts or records of its rolled-back first try.
        return await self._write(
            lambda conn: Batch(self, prepared).run(conn), sync=any(p.sync for p in prepared)
        )

    async def add_task(self, handle: TaskHandle) -> None:
        """Record a task handle durably (committed before this returns); its operation
        must exist."""
        row = task_row(self.CODEC, handle)
        await self._write(lambda conn: conn.count(self.Q["insert_task"], row))

    async def add_bulk(self, record: BulkRecord) -> None:
        """Record a bulk action once; a second record with its id changes nothing."""
        row = bulk_row(self.CODEC, record)
        await self._write(lambda conn: conn.count(self.Q["insert_bulk"], row))

    # -- audit -------------------------------------------------------------------------

    async def append_audit(self, entries: Sequence[AuditEntry]) -> None:
        await self._write(lambda conn: self._append_audit(conn, entries))

    async def keying_problem(self) -> str | None:
        """Why this store's audit key cannot verify or continue the ledger's chain (keyed
        with another key, or not keyed at all: store/chain.py), or None when it can. Every
        write is refused with that sentence; reads are not."""

        async def run(conn: Conn) -> str | None:
            return (await self._keying(conn, VERIFY))[0]

        return await self._read(run)

    async def prune(
        self,
        finished_before: datetime,
        now: datetime,
        actor: str,
        keep: Keep,
        bind: Bind | None = None,
    ) -> Pruned:
        """Remove the finished operations (retention.PRUNABLE, no lease, nothing scheduled)
        last changed before `finished_before`, with everything they own (their task handles
        too), and append a checkpoint to the audit chain, in one transaction; `keep` (which
        archives what is removed) runs before the commit, and nothing is removed if it
        raises. Task handles expired by `now` go as well; their operations stay. `bind`
        gives what the checkpoint binds of that archive (every line of it)."""

        async def run(conn: Conn) -> Pruned:
            return await prune(
                self, conn, finished_before=finished_before, now=now, actor=actor, keep=keep,
                bind=bind,
            )  # fmt: skip

        return await self._write(run)

    async def pack(
        self, finished_before: datetime, now: datetime, actor: str, seal: Seal, limit: int
    ) -> Pruned:
        """`prune` of at most `limit` operations (those with no notice still due, too), each
        replaced in place by the packed row `seal` makes, which the checkpoint binds
        (migration 0023); one transaction: a failure packs nothing of the batch."""

        async def run(conn: Conn) -> Pruned:
            return await prune(
                self, conn, finished_before=finished_before, now=now, actor=actor,
                keep=lambda _: None, seal=seal, limit=limit,
            )  # fmt: skip

        return await self._write(run)

    async def packed(self, operation_id: str | None = None) -> list[tuple[str, int | None, bytes]]:
        """The packed rows (operation_id, dictionary_id, data): `operation_id`'s, or all."""
        return await self._read(lambda conn: packed(self, conn, operation_id))

    async def pack_dictionaries(self) -> dict[int, PackDictionary]:
        """The zstd dictionaries packing trained, by id."""
        return await self._read(lambda conn: dictionaries(self, conn))

    def audit_link(self, prev_hash: str, entry: str) -> str:
        """The hash (hex) of `entry` linked to `prev_hash` under this store's audit key: how
        entries out of the log (packed ones) are checked against their own hashes."""
        return self._chain.link(prev_hash, entry)

    # -- leases and closing: each dialect's own (the statements differ in shape) ---------

    @abstractmethod
    async def claim_due(
        self,
        owner: str,
        now: datetime,
        limit: int,
        lease_for: timedelta,
        only: str | None = None,
        code: Collection[str] | None = None,
    ) -> list[Claim]:
        """Lease up to `limit` due operations (oldest due first), raising each fence;
        `only` restricts the claim to one operation id. `code` (None: no filter) names the
        code providers the claimer has: an operation of any other code provider is never
        claimed, whatever its due time (HTTP operations always are). Due means the poll
        time has come while unleased, or the lease has expired. A lease row is written when
        the operation changes hands; the same owner claiming it again extends its own row."""

    @abstractmethod
    async def renew(
        self, operation_id: str, fence: int, now: datetime, lease_for: timedelta
    ) -> bool:
        """Extend a held lease; False if the fence moved on."""

    @abstractmethod
    async def release(
        self, operation_id: str, fence: int, now: datetime, due: datetime | None
    ) -> bool:
        """Give a lease back at `now`, next due at `due` (None: nothing left to do), without
        changing anything else; False if the fence moved on."""

    @abstractmethod
    async def close(self) -> None:
        """Close the connections (and SQLite's writer thread)."""
