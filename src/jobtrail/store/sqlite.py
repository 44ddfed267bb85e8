"""The embedded store: one SQLite file in WAL mode. Its algorithms are store/engine.py's;
this module supplies SQLite's hooks.

Every call runs on one dedicated thread that owns the connection, so the event loop never
waits on an fsync. Writes take `BEGIN IMMEDIATE` (the write lock up front, so two processes
never deadlock upgrading a read lock) and commit with `synchronous=FULL`: a committed intent
survives power loss before the call it announces is made.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from jobtrail.errors import LedgerBusy, StoreError
from jobtrail.store import codec as c
from jobtrail.store import sqlite_files
from jobtrail.store.backup import backup
from jobtrail.store.chain import AuditChain
from jobtrail.store.changes import Change, Claim
from jobtrail.store.conn import Conn, Work, run_sync
from jobtrail.store.engine import Store
from jobtrail.store.machine_clock import machine_now, machine_wall
from jobtrail.store.migrations import migrations, refuse_newer
from jobtrail.store.prune import prune_queries
from jobtrail.store.queries import load_queries
from jobtrail.store.sqlite_files import check_same_files, connect, identities, split_script
from jobtrail.store.text import sqlite_moment, sqlite_time

T = TypeVar("T")


_t_out = c.LastOne(sqlite_time)
_t_in = sqlite_moment


CODEC = c.Codec(_t_out, _t_in)
# The codec's column lists are filled in now; the other {braces}, per call.
Q = load_queries(
    "sqlite",
    fill={
        "columns": ", ".join(c.COLUMNS),
        "values": ", ".join(":" + col for col in c.COLUMNS),
        "store_decided": ", ".join(c.STORE_DECIDED),
        "operation": c.selected(),  # the provider document resolved from its key (0008)
    },
)
Q |= load_queries("sqlite", "tasks.sql") | load_queries("sqlite", "bulk.sql")
Q |= load_queries("sqlite", "notices.sql") | load_queries("sqlite", "metrics.sql")
_UPDATES: dict[tuple[Any, ...], str] = {}  # update_operation, per shape of change


class SqliteConn:
    """The engine's `Conn` over the writer thread's connection: it never suspends."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    async def rows(self, sql: str, args: Any = None) -> list[Any]:
        return self.conn.execute(sql, () if args is None else args).fetchall()

    async def count(self, sql: str, args: Any = None) -> int:
        return self.conn.execute(sql, () if args is None else args).rowcount

    async def each(self, statements: Sequence[tuple[str, Any]]) -> list[Any | None]:
        return [self.conn.execute(sql, args).fetchone() for sql, args in statements]

    async def many(self, writes: Sequence[tuple[str, Sequence[Any]]]) -> None:
        for sql, rows in writes:
            self.conn.executemany(sql, rows)


class SqliteStore(Store):
    Q, Q_PRUNE, CODEC, MARK = Q, prune_queries("sqlite"), CODEC, "?"

    def __init__(
        self,
        conn: sqlite3.Connection,
        executor: ThreadPoolExecutor,
        key: bytes | None,
        path: str = ":memory:",
    ):
        self._conn, self._executor = conn, executor
        self._on = SqliteConn(conn)
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
            conn = await loop.run_in_executor(executor, connect, path, create)
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
                    f"{sqlite_files.BUSY_TIMEOUT_MS / 1000:g}s ({exc})"
                ) from None
            raise StoreError(f"the ledger database refused the operation: {exc}") from None
        except sqlite3.Error as exc:  # full, corrupt, or a constraint refused the write
            raise StoreError(f"the ledger database refused the operation: {exc}") from None

    async def _read(self, work: Work[T]) -> T:
        return await self._call(lambda: run_sync(work(self._on)))

    async def _write(self, work: Work[T], *, sync: bool = True) -> T:
        return await self._call(self._transaction, work, sync)

    def _transaction(self, work: Work[T], sync: bool = True, chain: bool = True) -> T:
        """Run `work` in one write transaction, on the writer thread. `sync=False` commits
        without waiting for the disk (WAL, synchronous=NORMAL): atomic, and made durable by
        the next synced commit, for writes that may be lost to a power cut (changes.must_sync).
        Every write but the migrations' (`chain=False`) is refused when this store's audit
        key cannot continue the ledger's chain (store/chain.py), read under the write lock
        so two first writers with different keys cannot both start it. A few stats per
        transaction (sqlite_files.py) are cheap next to its fsync."""
        check_same_files(self._identities)
        conn = self._conn
        if sync is not self._synced:
            conn.execute(f"PRAGMA synchronous = {'FULL' if sync else 'NORMAL'}")
            self._synced = sync
        conn.execute("BEGIN IMMEDIATE")
        try:
            if chain and not self._chain.agreed:
                run_sync(self._check_keying(self._on, fix=False))
            result = run_sync(work(self._on))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # a failed COMMIT (disk full, I/O) leaves it open
                conn.execute("ROLLBACK")
            raise
        return result

    def _migrate(self) -> None:
        async def run(on: Conn) -> None:
            conn = self._conn
            conn.execute(Q["begin_migrations"])
            done = {row[0] for row in conn.execute(Q["applied_migrations"])}
            refuse_newer("sqlite", done)
            for version, script in migrations("sqlite"):
                if version in done:
                    continue
                for statement in split_script(script):
                    conn.execute(statement)
                conn.execute(Q["record_migration"], (version, _t_out(datetime.now(UTC))))

        self._transaction(run, chain=False)

    def array(self, values: Sequence[Any]) -> Any:
        return json.dumps(list(values))

    def lease_clock(self) -> float | None:
        return machine_now()[1]

    def ledger_now(self) -> datetime:
        return machine_wall()  # every process sharing the file is on this machine

    def update_statement(self, change: Change) -> tuple[str, Any]:
        """Only the columns the change moves (against the record it was derived from)."""
        op = change.operation
        params = CODEC.mutable_row(op, change.before)
        shape = (*params, change.owner_fence is None, change.request_poll, change.release)
        if (update := _UPDATES.get(shape)) is None:
            assigned = ", ".join(f"{col} = :{col}" for col in params if col != "next_poll_at")
            if change.owner_fence is None:
                poll, guard = Q["poll_unless_leased"], ""
                if change.request_poll:
                    poll += ", " + Q["request_poll"]
            else:
                poll = Q["poll_on_release"] if change.release else Q["poll_while_leased"]
                guard = " " + Q["owner_guard"]
            release = ", " + Q["release_columns"] if change.release else ""
            update = Q["update_operation"].format(
                assigned=assigned, poll=poll, release=release, guard=guard
            )
            if len(_UPDATES) < 256:
                _UPDATES[shape] = update
        params["operation_id"], params["version"] = op.operation_id, op.version
        if change.owner_fence is not None:
            params["fence"] = change.owner_fence
        return update, params

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
        async def run(conn: Conn) -> list[Claim]:
            clock, reading = machine_now()  # read under the write lock, as the claim runs
            one, args = "", [_t_out(now), clock, reading]
            if only is not None:
                one, args = " " + Q["claimable_only"], [*args, only]
            if code is not None:
                one, args = one + " " + Q["claimable_drives"], [*args, self.array(list(code))]
            due = await conn.rows(Q["claimable"].format(only=one), (*args, limit))
            if not due:
                return []
            was_due = {row[0]: row[1] for row in due}
            expires = _t_out(now + lease_for)
            until = reading + lease_for.total_seconds()
            rows = await conn.rows(
                Q["claim"], (owner, expires, until, clock, self.array(list(was_due)))
            )
            claims = sorted(  # RETURNING follows the id lookup, not due order
                (
                    Claim(
                        operation=CODEC.operation(row),
                        was_due=CODEC._t(was_due[row["operation_id"]]),
                    )
                    for row in rows
                ),
                key=lambda cl: (cl.was_due, cl.operation.operation_id),
            )
            # Each claim's tenure, all claims at once: the rows this owner released last move
            # to the new fence, then the others get a row at it (each new fence is unused).
            start = (owner, _t_out(now), expires)
            tenures = [
                (cl.operation.fence, *start, cl.operation.operation_id, clock, reading, until)
                for cl in claims
            ]
            await conn.many([(Q["extend_tenure"], tenures), (Q["new_tenure"], tenures)])
            return claims

        return await self._write(run, sync=False)

    async def renew(
        self, operation_id: str, fence: int, now: datetime, lease_for: timedelta
    ) -> bool:
        expires = _t_out(now + lease_for)

        async def run(conn: Conn) -> bool:
            clock, reading = machine_now()
            args = (expires, operation_id, fence, clock, reading + lease_for.total_seconds())
            renewed = await conn.count(Q["renew"], args)
            if renewed:
                await conn.count(Q["renew_lease_row"], args)
            return renewed == 1

        return await self._write(run, sync=False)

    async def release(
        self, operation_id: str, fence: int, now: datetime, due: datetime | None
    ) -> bool:
        async def run(conn: Conn) -> bool:
            released = await conn.count(
                Q["release"], (_t_out(due), _t_out(now), operation_id, fence)
            )
            if released:
                row = {"released_at": _t_out(now), "clock": self.lease_clock()}
                row |= {"operation_id": operation_id, "fence": fence}
                await conn.count(Q["release_lease_row"], row)
            return released == 1

        return await self._write(run, sync=False)

    async def backup(self, destination: str | Path) -> tuple[int, int]:
        """Copy a consistent snapshot of the ledger, with what is still only in its -wal file,
        to a new file at `destination` (SQLite's online backup: writers may go on meanwhile).
        Returns the copy's (operations, audit entries)."""
        return await self._call(backup, self._conn, Path(destination))

    async def close(self) -> None:
        await self._call(self._conn.close)
        self._executor.shutdown(wait=True)
