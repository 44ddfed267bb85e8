"""The store's algorithms, written once for both dialects.

`EngineStore` implements every verb of `Store` over a small connection interface (`Conn`:
rows, count, each, many) and a few named hooks that a dialect supplies (`HOOKS`): how it
runs a read and a write transaction, how it passes an array, which clock a lease row is
read on, the guarded update of one change, and its claim/renew/release statements (SQLite
has no data-modifying CTE, so those are shaped differently). The SQL lives in
`sql/<dialect>/*.sql` under the same query names in both dialects.

The algorithms are coroutines: PostgreSQL awaits them on a pooled connection; SQLite runs
them on its writer thread with `run_sync` (its `Conn` never suspends), so the same code
serves a blocking and an asynchronous driver, as dbos-transact-py's one SQL path serves its
two databases.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from datetime import datetime, timedelta
from functools import partial
from typing import Any, ClassVar, TypeVar

from jobtrail.core.audit import AuditEntry, AuditRow, audit_row
from jobtrail.core.bulk import BulkRecord
from jobtrail.core.model import Attempt, Observation, Operation, Transition
from jobtrail.core.states import State
from jobtrail.core.tasks import TaskHandle
from jobtrail.errors import LedgerBusy, StoreError
from jobtrail.store import codec as c
from jobtrail.store.base import Change, Claim, CommitResult
from jobtrail.store.bulk import bulk_record, bulk_row
from jobtrail.store.chain import VERIFY, WRITE, AuditChain
from jobtrail.store.commit import Batch, Prepared, prepare
from jobtrail.store.conn import Conn, Work, first
from jobtrail.store.finding import OperationPage, OperationQuery, where
from jobtrail.store.group import Grouped
from jobtrail.store.leases import CLOCK_FIELDS, Lease
from jobtrail.store.notices import NoticeVerbs
from jobtrail.store.prune import dictionaries, packed, prune
from jobtrail.store.retention import Bind, Keep, PackDictionary, Pruned, Seal
from jobtrail.store.tasks import task_handle, task_row

T = TypeVar("T")
# A create as queued: the record, its encoded row and provider document, its audit texts.
_Create = tuple[Operation, dict[str, Any], tuple[str, str], tuple[tuple[Any, str], ...]]

# What a dialect class defines (tests/unit/test_store_engine.py holds it to this list): how
# it opens and closes, runs work, passes arrays and lease clocks, guards one change's update,
# and leases (claim, renew, release). Everything else is EngineStore's, written once.
HOOKS = frozenset(
    {
        "open",
        "close",
        "_read",
        "_write",
        "array",
        "lease_clock",
        "ledger_now",
        "update_statement",
        "claim_due",
        "renew",
        "release",
    }
)


class EngineStore(NoticeVerbs):
    # Set by each dialect: its queries (one dict, the same names in both; prune's apart),
    # codec, and the placeholder of a positional parameter.
    Q: ClassVar[dict[str, str]]
    Q_PRUNE: ClassVar[dict[str, str]]
    CODEC: ClassVar[c.Codec]
    MARK: ClassVar[str]
    _chain: AuditChain
    _creates: Grouped[_Create, Operation] | None = None

    # -- the hooks (see HOOKS) ------------------------------------------------------------

    async def _read(self, work: Work[T]) -> T:
        raise NotImplementedError

    async def _write(self, work: Work[T], *, sync: bool = True) -> T:
        """Run `work` in one write transaction, refused when this store's audit key cannot
        continue the chain; `sync=False` may commit without waiting for the disk."""
        raise NotImplementedError

    def array(self, values: Sequence[Any]) -> Any:
        """One parameter holding a list (PostgreSQL: an array; SQLite: JSON for json_each)."""
        raise NotImplementedError

    def lease_clock(self) -> float | None:
        """The lease clock's reading as a parameter, or None when the SQL reads the clock."""
        raise NotImplementedError

    def ledger_now(self) -> datetime:
        """The time on the ledger's clock (store/ledger_clock.py), which every judgment of
        time that decides safety or an end is made on."""
        raise NotImplementedError

    def update_statement(self, change: Change) -> tuple[str, Any]:
        """The guarded update of one change: (statement, parameters)."""
        raise NotImplementedError

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
        return await self._operation("find_by_remote_job", provider, c.storable(remote_job_id))

    async def list_operations(
        self, *, states: Sequence[State] = (), limit: int = 50
    ) -> list[Operation]:
        if states:
            args = (self.array([s.value for s in states]), limit)
            return await self._select("list_in_states", args, self.CODEC.operation)
        return await self._select("list", (limit,), self.CODEC.operation)

    async def count_by_state(self) -> dict[State, int]:
        rows = await self._select("count_by_state", None, lambda row: row)
        return {State(row["state"]): row["n"] for row in rows}

    async def find_operations(self, query: OperationQuery) -> OperationPage:
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
            return await self._select("leases_of", (operation_id,), self._lease)
        return await self._select("leases", None, self._lease)

    def _lease(self, row: Any) -> Lease:
        t = self.CODEC.t_in
        return Lease(
            operation_id=row["operation_id"],
            fence=row["fence"],
            owner=row["owner"],
            acquired_at=self.CODEC._t(row["acquired_at"]),
            expires_at=self.CODEC._t(row["expires_at"]),
            released_at=t(row["released_at"]),
            **{name: row[name] for name in CLOCK_FIELDS},
        )

    async def next_due(self, code: Collection[str] | None = None) -> datetime | None:
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
        found = await self._select("get_task", (task_hash,), lambda r: task_handle(self.CODEC, r))
        return first(found)

    async def bulk(self, bulk_id: str) -> BulkRecord | None:
        found = await self._select("get_bulk", (bulk_id,), lambda r: bulk_record(self.CODEC, r))
        return first(found)

    # -- writes ------------------------------------------------------------------------

    async def create_operation(self, op: Operation, audit: Sequence[AuditEntry]) -> Operation:
        """Creates share a transaction as the changes do (store/group.py), each encoded
        here, by its caller, before it is queued."""
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
        if not changes:
            return []
        prepared = [ch if isinstance(ch, Prepared) else self.prepare(ch) for ch in changes]
        # A new Batch for every try: a transaction retried after a deadlock must not carry
        # the seals, verdicts or records of its rolled-back first try.
        return await self._write(
            lambda conn: Batch(self, prepared).run(conn), sync=any(p.sync for p in prepared)
        )

    async def add_task(self, handle: TaskHandle) -> None:
        row = task_row(self.CODEC, handle)
        await self._write(lambda conn: conn.count(self.Q["insert_task"], row))

    async def add_bulk(self, record: BulkRecord) -> None:
        row = bulk_row(self.CODEC, record)
        await self._write(lambda conn: conn.count(self.Q["insert_bulk"], row))

    # -- audit -------------------------------------------------------------------------

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

    async def append_audit(self, entries: Sequence[AuditEntry]) -> None:
        await self._write(lambda conn: self._append_audit(conn, entries))

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

    async def keying_problem(self) -> str | None:
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
        async def run(conn: Conn) -> Pruned:
            return await prune(
                self, conn, finished_before=finished_before, now=now, actor=actor, keep=keep,
                bind=bind,
            )  # fmt: skip

        return await self._write(run)

    async def pack(
        self, finished_before: datetime, now: datetime, actor: str, seal: Seal, limit: int
    ) -> Pruned:
        async def run(conn: Conn) -> Pruned:
            return await prune(
                self, conn, finished_before=finished_before, now=now, actor=actor,
                keep=lambda _: None, seal=seal, limit=limit,
            )  # fmt: skip

        return await self._write(run)

    async def packed(self, operation_id: str | None = None) -> list[tuple[str, int | None, bytes]]:
        return await self._read(lambda conn: packed(self, conn, operation_id))

    def audit_link(self, prev_hash: str, entry: str) -> str:
        return self._chain.link(prev_hash, entry)

    async def pack_dictionaries(self) -> dict[int, PackDictionary]:
        return await self._read(lambda conn: dictionaries(self, conn))

    # -- leases (hooks: the statements differ in shape) ----------------------------------

    async def claim_due(
        self,
        owner: str,
        now: datetime,
        limit: int,
        lease_for: timedelta,
        only: str | None = None,
        code: Collection[str] | None = None,
    ) -> list[Claim]:
        raise NotImplementedError

    async def renew(
        self, operation_id: str, fence: int, now: datetime, lease_for: timedelta
    ) -> bool:
        raise NotImplementedError

    async def release(
        self, operation_id: str, fence: int, now: datetime, due: datetime | None
    ) -> bool:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError
