"""The shared store: PostgreSQL, for many workers on many machines.

Same behaviour as `SqliteStore`, with PostgreSQL doing the serialising: workers claim due
operations with `FOR UPDATE SKIP LOCKED` (so they never wait on each other), every write is
guarded by version and fence, and the one global audit chain is extended under a short lock
on its head row, taken last in each transaction. Group commits send their statements in
pipeline mode, so a batch costs a handful of round trips, not one per change.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Collection, Sequence
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, TypeVar
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg import AsyncConnection, errors
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from jobtrail.core.audit import AuditEntry, AuditRow, audit_row
from jobtrail.core.bulk import BulkRecord
from jobtrail.core.model import Attempt, Observation, Operation, Transition
from jobtrail.core.states import State
from jobtrail.core.tasks import TaskHandle
from jobtrail.errors import StoreError
from jobtrail.store import codec as c
from jobtrail.store.base import (
    Change,
    Claim,
    CommitResult,
    Verdict,
    audited,
    closes_run,
    folds,
    kept_when_refused,
    must_sync,
    refusal,
)
from jobtrail.store.bulk import bulk_record, bulk_row
from jobtrail.store.chain import VERIFY, WRITE, AuditChain
from jobtrail.store.finding import OperationPage, OperationQuery, where
from jobtrail.store.leases import Lease
from jobtrail.store.migrations import migrations, refuse_newer
from jobtrail.store.postgres_prune import prune
from jobtrail.store.queries import load_queries
from jobtrail.store.retention import Bind, Keep, Pruned
from jobtrail.store.tasks import task_handle, task_row
from jobtrail.store.urls import unencoded_at

T = TypeVar("T")
Conn = AsyncConnection[DictRow]
POOL_MIN, POOL_MAX = 1, 8
CONNECT_TIMEOUT_S = 10
POOL_WAIT_S = 30.0
_RETRIES = 5  # a deadlock or serialization failure rolls back everything: run it again


def _t_in(value: datetime | None) -> datetime | None:
    return None if value is None else value.astimezone(UTC)


CODEC = c.Codec(lambda value: value, _t_in)  # psycopg adapts aware datetimes to timestamptz


_FILL = {  # the operation's columns come from the codec, shared with SQLite
    "columns": ", ".join(c.COLUMNS),
    "values": ", ".join(f"%({col})s" for col in c.COLUMNS),
    "store_decided": ", ".join(c.STORE_DECIDED),
    "set_mutable": ", ".join(f"{col} = %({col})s" for col in c.MUTABLE if col != "next_poll_at"),
    "only": "",
    "drives": "",
    "operation": c.selected(),  # the provider document resolved from its key (0008)
    "operation_o": c.selected("o."),
}
_RAW = load_queries("postgres")
Q_TASKS = load_queries("postgres", "tasks.sql")
Q_BULK = load_queries("postgres", "bulk.sql")
Q = {name: sql.format(**_FILL) for name, sql in _RAW.items()}
Q_OPERATION = _FILL["operation"]
_ONE = {"only": "operation_id = %(only)s AND "}
_DRIVES = {"drives": "(provider_kind = 'http' OR provider = ANY(%(code)s::text[])) AND "}
Q["claim_one"] = _RAW["claim_due"].format(**_FILL | _ONE)
Q["claim_due_drives"] = _RAW["claim_due"].format(**_FILL | _DRIVES)
Q["claim_one_drives"] = _RAW["claim_due"].format(**_FILL | _ONE | _DRIVES)


class PostgresStore:
    def __init__(
        self, pool: AsyncConnectionPool[Conn], key: bytes | None, where: str, secret: str
    ) -> None:
        self._pool, self._where, self._secret = pool, where, secret
        self._chain = AuditChain(key)

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        audit_key: bytes | None = None,
        min_size: int | None = None,
        max_size: int | None = None,
    ) -> PostgresStore:
        """Connect, apply pending migrations, and open a pool of `min_size`..`max_size`
        connections (also settable as `pool_min` / `pool_max` in the URL's query)."""
        conninfo, sizes, where, secret = _parse(url)
        low = min_size or sizes.get("pool_min", POOL_MIN)
        pool = AsyncConnectionPool(
            conninfo,
            connection_class=AsyncConnection[DictRow],
            kwargs={"autocommit": True, "row_factory": dict_row},
            min_size=low,
            max_size=max(low, max_size or sizes.get("pool_max", POOL_MAX)),
            timeout=POOL_WAIT_S,
            open=False,
            name="jobtrail",
        )
        try:
            async with await AsyncConnection.connect(conninfo, autocommit=True) as conn:
                await _migrate(conn)
            await pool.open(wait=True, timeout=CONNECT_TIMEOUT_S)
        except StoreError:  # the ledger itself refused (a newer schema)
            await pool.close()
            raise
        except psycopg.Error as exc:
            await pool.close()
            raise StoreError(
                f"cannot open the ledger database at {where} ({_reason(exc, secret)}); check "
                "that the server is running, or set JOBTRAIL_DB / --db to the right ledger"
            ) from None
        return cls(pool, audit_key, where, secret)

    async def _run(self, work: Callable[[Conn], Awaitable[T]], *, transaction: bool = True) -> T:
        """Run `work` on a pooled connection (in one transaction unless told otherwise),
        translating database errors; a deadlock or serialization failure runs it again."""
        for attempt in itertools.count(1):
            try:
                async with self._pool.connection() as conn:
                    if not transaction:
                        return await work(conn)
                    async with conn.transaction():
                        return await work(conn)
            except (errors.DeadlockDetected, errors.SerializationFailure) as exc:
                if attempt >= _RETRIES:
                    raise StoreError(self._explain(exc)) from None
            except psycopg.Error as exc:
                raise StoreError(self._explain(exc)) from None
        raise AssertionError("unreachable")

    def _explain(self, exc: psycopg.Error) -> str:
        reason = _reason(exc, self._secret)
        if isinstance(exc, PoolTimeout):  # every pooled connection stayed busy that long
            reason = f"no pooled connection came free in {POOL_WAIT_S:.0f}s; raise pool_max"
        return f"the ledger database at {self._where} refused the operation: {reason}"

    async def _rows(self, query: str, args: Any = None) -> list[DictRow]:
        """One statement on its own (a single statement is atomic without BEGIN/COMMIT)."""
        return await self._run(partial(_fetch, Q[query], args), transaction=False)

    async def _one(self, query: str, *args: str) -> Operation | None:
        rows = await self._rows(query, args)
        return CODEC.operation(rows[0]) if rows else None

    # -- operations -------------------------------------------------------------------

    async def create_operation(self, op: Operation, audit: Sequence[AuditEntry]) -> Operation:
        await self._agree()

        async def run(conn: Conn) -> Operation:
            row = CODEC.operation_row(op)
            await _fetch(Q["insert_config"], c.keyed_config(row), conn)
            if not await _fetch(Q["insert_operation"], row, conn):
                (row,) = await _fetch(Q["get_by_key"], (c.storable(op.key),), conn)
                return CODEC.operation(row)
            await self._append_audit(conn, audit)
            return op

        return await self._run(run)

    async def get(self, operation_id: str) -> Operation | None:
        return await self._one("get", operation_id)

    async def get_by_key(self, key: str) -> Operation | None:
        return await self._one("get_by_key", c.storable(key))

    async def find_by_remote_job(self, provider: str, remote_job_id: str) -> Operation | None:
        return await self._one("find_by_remote_job", provider, c.storable(remote_job_id))

    async def list_operations(
        self, *, states: Sequence[State] = (), limit: int = 50
    ) -> list[Operation]:
        if states:
            rows = await self._rows("list_in_states", ([s.value for s in states], limit))
        else:
            rows = await self._rows("list", (limit,))
        return [CODEC.operation(row) for row in rows]

    async def count_by_state(self) -> dict[State, int]:
        return {State(row["state"]): row["n"] for row in await self._rows("count_by_state")}

    async def find_operations(self, query: OperationQuery) -> OperationPage:
        clause, args = where(query, "%s", lambda value: value)

        async def run(conn: Conn) -> OperationPage:
            (counted,) = await _fetch(f"SELECT count(*) AS n FROM operations{clause}", args, conn)
            rows = await _fetch(
                f"SELECT {Q_OPERATION} FROM operations{clause} "
                "ORDER BY operation_id DESC LIMIT %s OFFSET %s",
                [*args, query.limit, query.offset],
                conn,
            )
            return OperationPage(operations=[CODEC.operation(r) for r in rows], total=counted["n"])

        return await self._run(run)

    async def history(self, operation_id: str) -> list[Transition]:
        return [CODEC.transition(row) for row in await self._rows("history", (operation_id,))]

    async def attempts(self, operation_id: str) -> list[Attempt]:
        return [CODEC.attempt(row) for row in await self._rows("attempts", (operation_id,))]

    async def observations(self, operation_id: str) -> list[Observation]:
        return [CODEC.observation(r) for r in await self._rows("observations", (operation_id,))]

    # -- writes by steps -----------------------------------------------------------------

    async def commit(self, changes: Sequence[Change]) -> list[CommitResult]:
        await self._agree()
        return await self._run(lambda conn: _Batch(self, changes).run(conn)) if changes else []

    # -- leases ----------------------------------------------------------------------------

    async def claim_due(
        self,
        owner: str,
        now: datetime,
        limit: int,
        lease_for: timedelta,
        only: str | None = None,
        code: Collection[str] | None = None,
    ) -> list[Claim]:
        if limit <= 0:
            return []
        await self._agree()
        args = {"now": now, "limit": limit, "owner": owner, "expires": now + lease_for}
        args["lease_s"] = lease_for.total_seconds()
        query = ("claim_one" if only else "claim_due") + ("" if code is None else "_drives")
        rows = await self._rows(query, args | {"only": only, "code": list(code or ())})
        return [
            Claim(operation=CODEC.operation(row), was_due=row["was_due"].astimezone(UTC))
            for row in rows
        ]

    async def renew(
        self, operation_id: str, fence: int, now: datetime, lease_for: timedelta
    ) -> bool:
        await self._agree()
        args = {"expires": now + lease_for, "id": operation_id, "fence": fence}
        args["lease_s"] = lease_for.total_seconds()
        return bool((await self._rows("renew", args))[0]["n"] == 1)

    async def release(
        self, operation_id: str, fence: int, now: datetime, due: datetime | None
    ) -> bool:
        await self._agree()
        args = {"now": now, "due": due, "id": operation_id, "fence": fence}
        return bool((await self._rows("release", args))[0]["n"] == 1)

    async def next_due(self, code: Collection[str] | None = None) -> datetime | None:
        if code is None:
            return _t_in((await self._rows("next_due"))[0]["due"])
        rows = await self._rows("next_due_drives", (list(code),))
        return _t_in(rows[0]["due"]) if rows else None

    async def leases(self, operation_id: str | None = None) -> list[Lease]:
        one = (operation_id,) if operation_id else None
        rows = await self._rows("leases_of" if one else "leases", one)
        times = ("acquired_at", "expires_at", "released_at")
        return [Lease(**row | {k: _t_in(row[k]) for k in times}) for row in rows]

    # -- audit -------------------------------------------------------------------------------

    async def _append_audit(self, conn: Conn, entries: Sequence[AuditEntry]) -> None:
        """Link `entries` to the chain's head. Called last in a transaction: the head's row
        lock is held only from here to the commit."""
        if not entries:
            return
        (head,) = await _fetch(Q["lock_audit_head"], None, conn)
        if not self._chain.agreed:  # under the head's lock: one first writer fixes the keying
            await self._check_keying(conn, fix=True)
        rows = self._chain.extend(head["seq"], head["hash"], entries)
        async with conn.pipeline(), conn.cursor() as cur:
            await cur.executemany(Q["insert_audit"], rows)
            await cur.execute(Q["move_audit_head"], (rows[-1][0], rows[-1][4]))

    async def _keying(
        self, conn: Conn, act: str = WRITE
    ) -> tuple[str | None, tuple[bool, str | None], bool]:
        """This store's key judged against the chain (store/chain.py): (problem, the
        keying row, whether the ledger holds that row already)."""
        keying = await _fetch(Q["audit_keying"], None, conn)
        head = None if keying else await _fetch(Q["audit_head_entry"], None, conn)
        stored = (keying[0]["keyed"], keying[0]["key_check"]) if keying else None
        entry = (head[0]["prev_hash"], head[0]["entry"], head[0]["hash"]) if head else None
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
            await _fetch(Q["insert_audit_keying"], row, conn)

    async def _agree(self) -> None:
        """Before a write that appends nothing: refuse it too when the key cannot continue
        the chain (a worker without the key must not even claim)."""
        if not self._chain.agreed:
            await self._run(partial(self._check_keying, fix=False), transaction=False)

    async def prune(
        self,
        finished_before: datetime,
        now: datetime,
        actor: str,
        keep: Keep,
        bind: Bind | None = None,
    ) -> Pruned:
        await self._agree()
        work = partial(prune, codec=CODEC, append=self._append_audit)
        return await self._run(
            lambda conn: work(
                conn, finished_before=finished_before, now=now, actor=actor, keep=keep, bind=bind
            )
        )

    async def append_audit(self, entries: Sequence[AuditEntry]) -> None:
        await self._agree()
        await self._run(lambda conn: self._append_audit(conn, entries))

    async def keying_problem(self) -> str | None:
        async def run(conn: Conn) -> str | None:
            return (await self._keying(conn, VERIFY))[0]

        return await self._run(run, transaction=False)

    async def audit_rows(self, operation_id: str | None = None) -> list[AuditRow]:
        one = (operation_id,) if operation_id else None
        rows = await self._rows("audit_rows_of" if one else "audit_rows", one)
        return [audit_row(row) for row in rows]

    # -- task handles (migration 0013) ------------------------------------------------------

    async def add_task(self, handle: TaskHandle) -> None:
        await self._agree()  # a store whose audit key cannot continue the chain writes nothing
        row = task_row(CODEC, handle)
        await self._run(partial(_fetch, Q_TASKS["insert_task"], row), transaction=False)

    async def task(self, task_hash: str) -> TaskHandle | None:
        found = await self._run(
            partial(_fetch, Q_TASKS["get_task"], (task_hash,)), transaction=False
        )
        return task_handle(CODEC, found[0]) if found else None

    # -- bulk actions (migration 0016) -----------------------------------------------------

    async def add_bulk(self, record: BulkRecord) -> None:
        row = bulk_row(CODEC, record)
        await self._run(partial(_fetch, Q_BULK["insert_bulk"], row), transaction=False)

    async def bulk(self, bulk_id: str) -> BulkRecord | None:
        found = await self._run(partial(_fetch, Q_BULK["get_bulk"], (bulk_id,)), transaction=False)
        return bulk_record(CODEC, found[0]) if found else None

    async def close(self) -> None:
        await self._pool.close()


class _Batch:
    """One group commit, with the results of applying the changes one by one in the order
    given (as SqliteStore does). The guarded updates go out together, pipelined, in
    operation-id order so concurrent batches lock rows in the same order; then everything
    the accepted changes append; then their audit entries."""

    def __init__(self, store: PostgresStore, changes: Sequence[Change]) -> None:
        self.store, self.changes = store, changes
        self.events = [
            {c.storable(ob.event_id) for ob in ch.observations if ob.event_id} for ch in changes
        ]
        self.verdicts: dict[int, Verdict] = {}
        self.stored: dict[int, Operation] = {}
        self.sealed: list[AuditEntry] = []  # observation runs closed by this batch

    async def run(self, conn: Conn) -> list[CommitResult]:
        if not any(must_sync(change) for change in self.changes):
            await conn.execute(Q["relax_commit"])
        seen: set[str] = set()
        if wanted := set().union(*self.events):
            seen = {r["event_id"] for r in await _fetch(Q["known_events"], (list(wanted),), conn)}
        segment: list[int] = []
        pending: set[str] = set()
        for i, ids in enumerate(self.events):
            if ids & pending:  # an earlier change of this batch may record the same event
                await self._apply(conn, segment, seen)
                segment, pending = [], set()
            if ids & seen:
                self.verdicts[i] = Verdict.DUPLICATE_EVENT
            else:
                segment.append(i)
                pending |= ids
        await self._apply(conn, segment, seen)
        duplicates = [i for i, v in self.verdicts.items() if v is Verdict.DUPLICATE_EVENT]
        await self._load_current(conn, duplicates)
        audit = [
            e
            for i, ch in enumerate(self.changes)
            if audited(ch, self.verdicts[i])
            for e in ch.audit
        ]
        await self.store._append_audit(conn, audit + self.sealed)
        return [
            CommitResult(verdict=self.verdicts[i], operation=self.stored.get(i))
            for i in range(len(self.changes))
        ]

    async def _fold(self, conn: Conn, accepted: list[int]) -> set[int]:
        """The accepted changes whose status read folded into an open observation run."""
        candidates = [i for i in accepted if folds(self.changes[i])]
        if not candidates:
            return set()
        async with conn.cursor() as cur:
            params = [CODEC.fold_row(self.changes[i].observations[0]) for i in candidates]
            await cur.executemany(Q["fold_observation"], params, returning=True)
            rows = [await result.fetchone() async for result in cur.results()]
        return {i for i, row in zip(candidates, rows, strict=True) if row is not None}

    async def _close_runs(self, conn: Conn, indexes: list[int]) -> None:
        """Close the open observation runs of these changes' operations, sealing each."""
        if not indexes:
            return
        ops = [self.changes[i].operation for i in indexes]
        when = [op.updated_at or datetime.now(UTC) for op in ops]
        rows = await _fetch(Q["close_runs"], ([op.operation_id for op in ops], when), conn)
        for row in rows:
            run = CODEC.observation(row)
            assert run.closed_at is not None
            self.sealed.append(c.run_closed(run, run.closed_at))

    async def _load_current(self, conn: Conn, indexes: list[int]) -> None:
        if ids := [self.changes[i].operation.operation_id for i in indexes]:
            rows = await _fetch(Q["current"], (ids,), conn)
            current = {row["operation_id"]: CODEC.operation(row) for row in rows}
            self.stored |= {
                i: current[op_id] for i, op_id in zip(indexes, ids, strict=True) if op_id in current
            }

    # C901: one change's rows in the order of the transaction (operation, attempt, rows, audit)
    async def _apply(self, conn: Conn, segment: list[int], seen: set[str]) -> None:  # noqa: C901
        if not segment:
            return
        order = sorted(segment, key=lambda i: (self.changes[i].operation.operation_id, i))
        async with conn.cursor() as cur:
            params = [_update_params(self.changes[i]) for i in order]
            await cur.executemany(Q["update_operation"], params, returning=True)
            rows = [await result.fetchone() async for result in cur.results()]
        updated = dict(zip(order, rows, strict=True))
        await self._load_current(conn, [i for i in segment if updated[i] is None])
        writes: dict[str, list[Any]] = {query: [] for query in _APPENDS}
        folded = await self._fold(conn, [i for i in segment if updated[i] is not None])
        await self._close_runs(
            conn,
            [
                i
                for i in segment
                if updated[i] is not None and i not in folded and closes_run(self.changes[i])
            ],
        )
        for i in segment:
            change, row = self.changes[i], updated[i]
            if row is None:
                self.verdicts[i] = verdict = refusal(change, self.stored.get(i))
                if (kept := kept_when_refused(change, verdict)) is not None:
                    writes["finish_attempt"].append(CODEC.attempt_outcome_row(kept))
                continue
            self.verdicts[i], self.stored[i] = Verdict.OK, CODEC.after_update(change.operation, row)
            seen |= self.events[i]
            if change.release:
                op = change.operation
                writes["release_lease_row"].append(
                    (op.updated_at, op.operation_id, change.owner_fence)
                )
            if i in folded:
                continue
            if change.safe_read is not None:
                writes["insert_attempt"].append(CODEC.attempt_row(change.safe_read))
            if change.attempt_started is not None:
                writes["insert_attempt"].append(CODEC.attempt_row(change.attempt_started))
            if change.attempt_finished is not None:
                writes["finish_attempt"].append(CODEC.attempt_outcome_row(change.attempt_finished))
            writes["insert_transition"] += map(CODEC.transition_row, change.transitions)
            writes["insert_observation"] += map(CODEC.observation_row, change.observations)
        async with conn.pipeline(), conn.cursor() as cur:
            for query, args in writes.items():
                if args:
                    await cur.executemany(Q[query], args)
        ended = [i for i in segment if updated[i] is not None and i not in folded]
        await self._close_runs(
            conn, [i for i in ended if self.changes[i].operation.state.ends_automation]
        )


# In this order, so that an attempt finished in the batch it started in is found.
_APPENDS = ["insert_attempt", "finish_attempt", "insert_transition", "insert_observation"]
_APPENDS += ["release_lease_row"]


def _update_params(change: Change) -> dict[str, Any]:
    op, fence = change.operation, change.owner_fence
    params = CODEC.mutable_row(op)
    params.update(operation_id=op.operation_id, version=op.version, fence=fence)
    return params | {
        "owner": fence is not None,
        "release": change.release,
        "request_poll": change.request_poll,
    }


async def _fetch(query: str, args: Any, conn: Conn) -> list[DictRow]:
    cur = await conn.execute(query, args)
    return await cur.fetchall() if cur.description else []


async def _migrate(conn: AsyncConnection[Any]) -> None:
    """Apply pending migrations in one transaction, under an advisory lock so that workers
    starting together do not race."""
    async with conn.transaction():
        await conn.execute(Q["begin_migrations"])
        cur = await conn.execute("SELECT version FROM schema_migrations")
        done = {row[0] for row in await cur.fetchall()}
        refuse_newer("postgres", done)
        for version, script in migrations("postgres"):
            if version not in done:
                await conn.execute(script)
                await conn.execute(
                    "INSERT INTO schema_migrations (version) VALUES (%s)", (version,)
                )


def _parse(url: str) -> tuple[str, dict[str, int], str, str]:
    """The conninfo to connect with (without `pool_min` / `pool_max`, which libpq refuses),
    those pool sizes, where it points (user@host:port/dbname), and its password, which no
    message may show."""
    if (problem := unencoded_at(url)) is not None:
        raise StoreError(problem)
    try:
        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=True)
        sizes = {k: v for k, v in query if k in ("pool_min", "pool_max")}
        if sizes:
            rest = urlencode([(k, v) for k, v in query if k not in sizes], quote_via=quote)
            url = urlunsplit(parts._replace(query=rest))
        params = conninfo_to_dict(url)
    except (ValueError, psycopg.Error):
        raise StoreError(
            "the ledger URL is not a valid PostgreSQL connection string; expected "
            "postgresql://user@host:port/dbname (JOBTRAIL_DB / --db selects the ledger)"
        ) from None
    if not all(v.isdigit() and int(v) > 0 for v in sizes.values()):
        raise StoreError("pool_min and pool_max in the ledger URL must be positive whole numbers")
    if "connect_timeout" not in params:
        url = make_conninfo(url, connect_timeout=CONNECT_TIMEOUT_S)
    user, host, port, db = (str(params.get(k) or "") for k in ("user", "host", "port", "dbname"))
    where = f"{user}{'@' if user else ''}{host or 'localhost'}:{port or 5432}/{db or user}"
    return url, {k: int(v) for k, v in sizes.items()}, where, str(params.get("password") or "")


def _reason(exc: BaseException, secret: str) -> str:
    text = " ".join(str(exc).split()).rstrip(".") or type(exc).__name__
    return text.replace(secret, "***") if secret else text
