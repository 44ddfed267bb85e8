"""The embedded store: one SQLite file in WAL mode.

Every call runs on one dedicated thread that owns the connection, so the event loop never
waits on an fsync. Writes take `BEGIN IMMEDIATE` (the write lock up front, so two processes
never deadlock upgrading a read lock) and commit with `synchronous=FULL`: a committed intent
survives power loss before the call it announces is made.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from jobtrail.core.audit import AuditEntry, AuditRow, audit_row
from jobtrail.core.bulk import BulkRecord
from jobtrail.core.model import Attempt, Observation, Operation, Transition
from jobtrail.core.states import State
from jobtrail.core.tasks import TaskHandle
from jobtrail.errors import LedgerBusy, StoreError
from jobtrail.store import codec as c
from jobtrail.store.backup import backup
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
from jobtrail.store.chain import VERIFY, AuditChain
from jobtrail.store.finding import OperationPage, OperationQuery, where
from jobtrail.store.leases import Lease
from jobtrail.store.machine_clock import machine_now
from jobtrail.store.migrations import migrations, refuse_newer
from jobtrail.store.queries import load_queries
from jobtrail.store.retention import Bind, Keep, Pruned
from jobtrail.store.sqlite_files import check_same_files, identities
from jobtrail.store.sqlite_prune import prune
from jobtrail.store.tasks import task_handle, task_row

T = TypeVar("T")
BUSY_TIMEOUT_MS = 30_000


def _format_time(value: datetime | None) -> str | None:
    if value is None:
        return None
    # isoformat gives the same fixed-width text as strftime("%Y-%m-%dT%H:%M:%S.%fZ") for
    # every year from 1000 on, in a third less time; a step formats a dozen times.
    return value.astimezone(UTC).isoformat(timespec="microseconds")[:-6] + "Z"


_t_out = c.LastOne(_format_time)


def _t_in(value: Any) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def _t(value: Any) -> datetime:
    return datetime.fromisoformat(value)


CODEC = c.Codec(_t_out, _t_in)
# The codec's column lists are filled in now; the other {braces}, per call.
Q_TASKS = load_queries("sqlite", "tasks.sql")
Q_BULK = load_queries("sqlite", "bulk.sql")
Q = load_queries(
    "sqlite",
    fill={
        "columns": ", ".join(c.COLUMNS),
        "values": ", ".join(":" + col for col in c.COLUMNS),
        "store_decided": ", ".join(c.STORE_DECIDED),
        "operation": c.selected(),  # the provider document resolved from its key (0008)
    },
)


def _connect(path: str, create: bool) -> sqlite3.Connection:
    if path == ":memory:":
        target, uri = path, False
    elif create:
        Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
        target, uri = path, False
    elif not Path(path).expanduser().exists():
        raise StoreError(
            f"no ledger at {Path(path).expanduser().absolute()}; `jobtrail submit` or "
            "`jobtrail worker` creates one (or set JOBTRAIL_DB / --db to an existing ledger)"
        )
    else:  # mode=rw: a file that vanishes after the check above is not made again
        target, uri = Path(path).expanduser().absolute().as_uri() + "?mode=rw", True
    conn = sqlite3.connect(
        target,
        isolation_level=None,
        check_same_thread=False,
        timeout=BUSY_TIMEOUT_MS / 1000,
        uri=uri,
    )
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    _wal(conn)
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def _wal(conn: sqlite3.Connection) -> None:
    """Switch to WAL. The switch needs an exclusive lock and SQLite does not wait for it (the
    busy timeout does not apply), so two processes opening a new ledger at once retry here."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode != sqlite3.SQLITE_BUSY or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _split(script: str) -> list[str]:
    """Statements of a script; trigger bodies (BEGIN ... END;) stay whole."""
    statements, buffer = [], ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                statements.append(buffer.strip())
            buffer = ""
    return statements


class SqliteStore:
    def __init__(
        self,
        conn: sqlite3.Connection,
        executor: ThreadPoolExecutor,
        key: bytes | None,
        path: str = ":memory:",
    ):
        self._conn, self._executor = conn, executor
        self._chain = AuditChain(key)
        self._path = path if path == ":memory:" else str(Path(path).expanduser().absolute())
        self._identities = identities(self._path)  # the main file now; all three once open
        self._synced = True  # the connection's synchronous setting is FULL

    @classmethod
    async def open(
        cls, path: str, *, audit_key: bytes | None = None, create: bool = True
    ) -> SqliteStore:
        """Open (and migrate) the ledger file at `path`; with `create` False, a missing file
        is an error instead of a new, empty ledger."""
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jobtrail-sqlite")
        loop = asyncio.get_running_loop()
        conn: sqlite3.Connection | None = None
        try:
            conn = await loop.run_in_executor(executor, _connect, path, create)
            store = cls(conn, executor, audit_key, path)
            await loop.run_in_executor(executor, store._migrate)
            # The migration's transaction made the -wal and -shm files: watch them too (the
            # main file as it was when opened, should it have been replaced meanwhile).
            files = await loop.run_in_executor(executor, identities, store._path)
            store._identities = files | store._identities
        except (sqlite3.Error, OSError, StoreError) as exc:  # OSError: no folder for it
            if conn is not None:
                await loop.run_in_executor(executor, conn.close)
            executor.shutdown(wait=False)
            if isinstance(exc, StoreError):
                raise
            raise StoreError(f"cannot open the ledger at {path}: {exc}") from None
        return store

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, partial(fn, *args))
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                raise LedgerBusy(
                    f"the ledger at {self._path} stayed locked by another process's write for "
                    f"{BUSY_TIMEOUT_MS / 1000:g}s ({exc})"
                ) from None
            raise StoreError(f"the ledger database refused the operation: {exc}") from None
        except sqlite3.Error as exc:  # full, corrupt, or a constraint refused the write
            raise StoreError(f"the ledger database refused the operation: {exc}") from None

    def _write(
        self, fn: Callable[[sqlite3.Connection], T], *, sync: bool = True, chain: bool = True
    ) -> T:
        """Run `fn` in one write transaction. `sync=False` commits without waiting for the
        disk (WAL, synchronous=NORMAL): atomic, and made durable by the next synced commit,
        for writes that may be lost to a power cut (see base.must_sync). Every write but
        the migrations' (`chain=False`) is refused when this store's audit key cannot
        continue the ledger's chain (store/chain.py)."""
        self._check_same_file()
        conn = self._conn
        if sync is not self._synced:
            conn.execute(f"PRAGMA synchronous = {'FULL' if sync else 'NORMAL'}")
            self._synced = sync
        conn.execute("BEGIN IMMEDIATE")
        try:
            if chain and not self._chain.agreed:
                self._check_keying(conn)
            result = fn(conn)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return result

    def _check_same_file(self) -> None:
        """Refuse to write once a file of the ledger was deleted or replaced under this
        process (store/sqlite_files.py). A few stats per transaction are cheap next to its
        fsync."""
        check_same_files(self._identities)

    def _check_keying(self, conn: sqlite3.Connection) -> None:
        """Refuse this transaction unless this store's key continues the chain (read under
        the write lock, so two first writers with different keys cannot both start it)."""
        keying = conn.execute(Q["audit_keying"]).fetchone()
        head = None if keying is not None else conn.execute(Q["audit_head_entry"]).fetchone()
        problem, row = self._chain.judge(keying, head)
        if problem is not None:
            raise StoreError(problem)
        if keying is not None:
            self._chain.agreed = True
        elif head is not None:  # a chain begun before 0011: its head told its keying
            conn.execute(Q["insert_audit_keying"], row)

    def _migrate(self) -> None:
        def run(conn: sqlite3.Connection) -> None:
            conn.execute(Q["create_migrations_table"])
            done = {row[0] for row in conn.execute(Q["applied_migrations"])}
            refuse_newer("sqlite", done)
            for version, script in migrations("sqlite"):
                if version in done:
                    continue
                for statement in _split(script):
                    conn.execute(statement)
                conn.execute(Q["record_migration"], (version, _t_out(datetime.now(UTC))))

        self._write(run, chain=False)

    # -- operations -------------------------------------------------------------------

    async def create_operation(self, op: Operation, audit: Sequence[AuditEntry]) -> Operation:
        def run(conn: sqlite3.Connection) -> Operation:
            row = conn.execute(Q["get_by_key"], (c.storable(op.key),)).fetchone()
            if row is not None:
                return CODEC.operation(row)
            row = CODEC.operation_row(op)
            conn.execute(Q["insert_config"], c.keyed_config(row))
            conn.execute(Q["insert_operation"], row)
            self._append_audit(conn, audit)
            return op

        return await self._call(self._write, run)

    async def get(self, operation_id: str) -> Operation | None:
        return await self._call(self._get, operation_id)

    async def get_by_key(self, key: str) -> Operation | None:
        def run() -> Operation | None:
            row = self._conn.execute(Q["get_by_key"], (c.storable(key),)).fetchone()
            return None if row is None else CODEC.operation(row)

        return await self._call(run)

    async def find_by_remote_job(self, provider: str, remote_job_id: str) -> Operation | None:
        def run() -> Operation | None:
            args = (provider, c.storable(remote_job_id))
            row = self._conn.execute(Q["find_by_remote_job"], args).fetchone()
            return None if row is None else CODEC.operation(row)

        return await self._call(run)

    def _get(self, operation_id: str) -> Operation | None:
        row = self._conn.execute(Q["get"], (operation_id,)).fetchone()
        return None if row is None else CODEC.operation(row)

    async def list_operations(
        self, *, states: Sequence[State] = (), limit: int = 50
    ) -> list[Operation]:
        def run() -> list[Operation]:
            if states:
                marks = ", ".join("?" for _ in states)
                rows = self._conn.execute(
                    Q["list_in_states"].format(marks=marks), (*[s.value for s in states], limit)
                )
            else:
                rows = self._conn.execute(Q["list"], (limit,))
            return [CODEC.operation(row) for row in rows]

        return await self._call(run)

    async def count_by_state(self) -> dict[State, int]:
        def run() -> dict[State, int]:
            rows = self._conn.execute(Q["count_by_state"])
            return {State(state): n for state, n in rows}

        return await self._call(run)

    async def find_operations(self, query: OperationQuery) -> OperationPage:
        clause, args = where(query, "?", _t_out)

        def run() -> OperationPage:
            (total,) = self._conn.execute(Q["count_found"].format(clause=clause), args).fetchone()
            rows = self._conn.execute(
                Q["find"].format(clause=clause), [*args, query.limit, query.offset]
            )
            return OperationPage(operations=[CODEC.operation(r) for r in rows], total=total)

        return await self._call(run)

    async def history(self, operation_id: str) -> list[Transition]:
        return await self._select(Q["history"], (operation_id,), CODEC.transition)

    async def attempts(self, operation_id: str) -> list[Attempt]:
        return await self._select(Q["attempts"], (operation_id,), CODEC.attempt)

    async def observations(self, operation_id: str) -> list[Observation]:
        return await self._select(Q["observations"], (operation_id,), CODEC.observation)

    async def _select(
        self, sql: str, args: tuple[Any, ...], convert: Callable[[sqlite3.Row], T]
    ) -> list[T]:
        def run() -> list[T]:
            return [convert(row) for row in self._conn.execute(sql, args)]

        return await self._call(run)

    # -- writes by steps -----------------------------------------------------------------

    async def commit(self, changes: Sequence[Change]) -> list[CommitResult]:
        sync = any(must_sync(change) for change in changes)
        return await self._call(partial(self._write, sync=sync), partial(self._commit, changes))

    def _commit(self, changes: Sequence[Change], conn: sqlite3.Connection) -> list[CommitResult]:
        results: list[CommitResult] = []
        audit: list[AuditEntry] = []
        for change in changes:
            result = self._apply_change(conn, change, audit)
            results.append(result)
            if audited(change, result.verdict):
                audit.extend(change.audit)
        self._append_audit(conn, audit)
        return results

    def _record_facts(
        self, conn: sqlite3.Connection, change: Change, audit: list[AuditEntry]
    ) -> None:
        """Attempts and observations of an accepted change, folding a repeated read into
        the open observation run and sealing a run that closes (see Store.commit)."""
        op = change.operation
        if (
            folds(change)
            and conn.execute(Q["fold_observation"], CODEC.fold_row(change.observations[0])).rowcount
        ):
            return
        if closes_run(change):
            self._close_run(conn, op.operation_id, op.updated_at, audit)
        if change.attempt_started is not None:
            conn.execute(Q["insert_attempt"], CODEC.attempt_row(change.attempt_started))
        if change.attempt_finished is not None:
            conn.execute(Q["finish_attempt"], CODEC.attempt_outcome_row(change.attempt_finished))
        if change.safe_read is not None:
            conn.execute(Q["insert_attempt"], CODEC.attempt_row(change.safe_read))
        if change.transitions:
            conn.executemany(
                Q["insert_transition"], [CODEC.transition_row(t) for t in change.transitions]
            )
        if change.observations:
            conn.executemany(
                Q["insert_observation"], [CODEC.observation_row(o) for o in change.observations]
            )
        if op.state.ends_automation:
            self._close_run(conn, op.operation_id, op.updated_at, audit)

    def _close_run(
        self,
        conn: sqlite3.Connection,
        operation_id: str,
        at: datetime | None,
        audit: list[AuditEntry],
    ) -> None:
        when = at or datetime.now(UTC)
        for row in conn.execute(Q["close_run"], (_t_out(when), operation_id)).fetchall():
            audit.append(c.run_closed(CODEC.observation(row), when))

    def _apply_change(
        self, conn: sqlite3.Connection, change: Change, audit: list[AuditEntry]
    ) -> CommitResult:
        op = change.operation
        if any(
            ob.event_id and conn.execute(Q["known_event"], (c.storable(ob.event_id),)).fetchone()
            for ob in change.observations
        ):
            return CommitResult(
                verdict=Verdict.DUPLICATE_EVENT, operation=self._get(op.operation_id)
            )
        params = CODEC.mutable_row(op, change.before)
        assigned = ", ".join(f"{col} = :{col}" for col in params if col != "next_poll_at")
        params["operation_id"], params["version"] = op.operation_id, op.version
        if change.owner_fence is None:
            poll, guard = Q["poll_unless_leased"], ""
            if change.request_poll:
                poll += ", " + Q["request_poll"]
        else:
            poll = Q["poll_on_release"] if change.release else Q["poll_while_leased"]
            guard = " " + Q["owner_guard"]
            params["fence"] = change.owner_fence
        release = ", " + Q["release_columns"] if change.release else ""
        update = Q["update_operation"].format(
            assigned=assigned, poll=poll, release=release, guard=guard
        )
        row = conn.execute(update, params).fetchone()
        if row is None:
            current = self._get(op.operation_id)
            verdict = refusal(change, current)
            if (kept := kept_when_refused(change, verdict)) is not None:
                conn.execute(Q["finish_attempt"], CODEC.attempt_outcome_row(kept))
            return CommitResult(verdict=verdict, operation=current)
        self._record_facts(conn, change, audit)
        if change.release:
            conn.execute(
                Q["release_lease_row"],
                (_t_out(op.updated_at), machine_now()[1], op.operation_id, change.owner_fence),
            )
        return CommitResult(verdict=Verdict.OK, operation=CODEC.after_update(op, row))

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
        def run(conn: sqlite3.Connection) -> list[Claim]:
            clock, reading = machine_now()  # read under the write lock, as the claim runs
            one, args = "", [_t_out(now), clock, reading]
            if only is not None:
                one, args = " " + Q["claimable_only"], [*args, only]
            if code is not None:
                one, args = one + " " + _drives(code), [*args, *code]
            due = conn.execute(Q["claimable"].format(only=one), (*args, limit)).fetchall()
            if not due:
                return []
            was_due = {row[0]: row[1] for row in due}
            expires = _t_out(now + lease_for)
            marks = ", ".join("?" for _ in due)
            until = reading + lease_for.total_seconds()
            rows = conn.execute(
                Q["claim"].format(marks=marks), (owner, expires, until, clock, *was_due)
            ).fetchall()
            claims = sorted(  # RETURNING follows the id lookup, not due order
                (
                    Claim(operation=CODEC.operation(row), was_due=_t(was_due[row["operation_id"]]))
                    for row in rows
                ),
                key=lambda cl: (cl.was_due, cl.operation.operation_id),
            )
            for cl in claims:
                tenure = (
                    cl.operation.fence,
                    owner,
                    _t_out(now),
                    expires,
                    cl.operation.operation_id,
                    clock,
                    reading,
                    until,
                )
                if not conn.execute(Q["extend_tenure"], tenure).rowcount:
                    conn.execute(Q["new_tenure"], tenure)
            return claims

        return await self._call(partial(self._write, sync=False), run)

    async def renew(
        self, operation_id: str, fence: int, now: datetime, lease_for: timedelta
    ) -> bool:
        expires = _t_out(now + lease_for)

        def run(conn: sqlite3.Connection) -> bool:
            clock, reading = machine_now()
            args = (expires, operation_id, fence, clock, reading + lease_for.total_seconds())
            cur = conn.execute(Q["renew"], args)
            if cur.rowcount:
                conn.execute(Q["renew_lease_row"], args)
            return cur.rowcount == 1

        return await self._call(partial(self._write, sync=False), run)

    async def release(
        self, operation_id: str, fence: int, now: datetime, due: datetime | None
    ) -> bool:
        def run(conn: sqlite3.Connection) -> bool:
            cur = conn.execute(Q["release"], (_t_out(due), _t_out(now), operation_id, fence))
            if cur.rowcount:
                released = (_t_out(now), machine_now()[1], operation_id, fence)
                conn.execute(Q["release_lease_row"], released)
            return cur.rowcount == 1

        return await self._call(partial(self._write, sync=False), run)

    async def next_due(self, code: Collection[str] | None = None) -> datetime | None:
        def run() -> datetime | None:
            if code is None:
                row = self._conn.execute(Q["next_due"]).fetchone()
            else:
                sql = Q["next_due_drives"].format(drives=_drives(code))
                row = self._conn.execute(sql, list(code)).fetchone()
            return None if row is None else _t_in(row[0])

        return await self._call(run)

    async def leases(self, operation_id: str | None = None) -> list[Lease]:
        if operation_id:
            return await self._select(Q["leases_of"], (operation_id,), _lease)
        return await self._select(Q["leases"], (), _lease)

    # -- audit -------------------------------------------------------------------------------

    def _append_audit(self, conn: sqlite3.Connection, entries: Sequence[AuditEntry]) -> None:
        if not entries:
            return
        head = conn.execute(Q["audit_head"]).fetchone()
        if head is None:  # the chain's first entry fixes its keying (checked in _write)
            conn.execute(Q["insert_audit_keying"], self._chain.judge(None, None)[1])
        rows = self._chain.extend(head[0] if head else 0, head[1] if head else None, entries)
        conn.executemany(Q["insert_audit"], rows)

    async def prune(
        self,
        finished_before: datetime,
        now: datetime,
        actor: str,
        keep: Keep,
        bind: Bind | None = None,
    ) -> Pruned:
        work = partial(prune, codec=CODEC, append=self._append_audit)
        return await self._call(
            self._write,
            lambda conn: work(
                conn, finished_before=finished_before, now=now, actor=actor, keep=keep, bind=bind
            ),
        )

    async def append_audit(self, entries: Sequence[AuditEntry]) -> None:
        await self._call(self._write, lambda conn: self._append_audit(conn, entries))

    async def keying_problem(self) -> str | None:
        def run() -> str | None:
            keying = self._conn.execute(Q["audit_keying"]).fetchone()
            head = None if keying else self._conn.execute(Q["audit_head_entry"]).fetchone()
            return self._chain.judge(keying, head, VERIFY)[0]

        return await self._call(run)

    async def audit_rows(self, operation_id: str | None = None) -> list[AuditRow]:
        if operation_id:
            return await self._select(Q["audit_rows_of"], (operation_id,), audit_row)
        return await self._select(Q["audit_rows"], (), audit_row)

    # -- task handles (migration 0013) ------------------------------------------------------

    async def add_task(self, handle: TaskHandle) -> None:
        row = task_row(CODEC, handle)
        await self._call(self._write, lambda conn: conn.execute(Q_TASKS["insert_task"], row))

    async def task(self, task_hash: str) -> TaskHandle | None:
        def run() -> TaskHandle | None:
            row = self._conn.execute(Q_TASKS["get_task"], (task_hash,)).fetchone()
            return None if row is None else task_handle(CODEC, row)

        return await self._call(run)

    # -- bulk actions (migration 0016) -----------------------------------------------------

    async def add_bulk(self, record: BulkRecord) -> None:
        row = bulk_row(CODEC, record)
        await self._call(self._write, lambda conn: conn.execute(Q_BULK["insert_bulk"], row))

    async def bulk(self, bulk_id: str) -> BulkRecord | None:
        def run() -> BulkRecord | None:
            row = self._conn.execute(Q_BULK["get_bulk"], (bulk_id,)).fetchone()
            return None if row is None else bulk_record(CODEC, row)

        return await self._call(run)

    async def backup(self, destination: str | Path) -> tuple[int, int]:
        """Copy a consistent snapshot of the ledger, with what is still only in its -wal file,
        to a new file at `destination` (SQLite's online backup: writers may go on meanwhile).
        Returns the copy's (operations, audit entries)."""
        return await self._call(backup, self._conn, Path(destination))

    async def close(self) -> None:
        await self._call(self._conn.close)
        self._executor.shutdown(wait=True)


def _drives(code: Collection[str]) -> str:
    """The claim's filter for a claimer having the code providers `code` (one ? each): HTTP
    operations, and code operations of those providers. It rides along the due index."""
    return Q["claimable_drives"].format(marks=", ".join("?" for _ in code))


def _lease(row: sqlite3.Row) -> Lease:
    return Lease(
        operation_id=row["operation_id"],
        fence=row["fence"],
        owner=row["owner"],
        acquired_at=_t(row["acquired_at"]),
        expires_at=_t(row["expires_at"]),
        released_at=_t_in(row["released_at"]),
        clock=row["clock"],
        clock_acquired=row["clock_acquired"],
        clock_expires=row["clock_expires"],
        clock_released=row["clock_released"],
    )
