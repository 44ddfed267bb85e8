"""The shared store: PostgreSQL, for many workers on many machines. Its algorithms are
store/engine.py's; this module supplies PostgreSQL's hooks.

PostgreSQL does the serialising: workers claim due operations with `FOR UPDATE SKIP LOCKED`
(so they never wait on each other), every write is guarded by version and fence, and the
one global audit chain is extended under a short lock on its head row, taken last in each
transaction. Group commits send their guarded updates in one `executemany` and their
appends in pipeline mode, so a batch costs a handful of round trips, not one per change.
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

from jobtrail.core.redact import Redactor
from jobtrail.errors import StoreError
from jobtrail.store import codec as c
from jobtrail.store.chain import AuditChain
from jobtrail.store.changes import Change, Claim
from jobtrail.store.conn import Work
from jobtrail.store.engine import Store
from jobtrail.store.ledger_clock import ServerClock
from jobtrail.store.migrations import migrations, refuse_newer
from jobtrail.store.prune import prune_queries
from jobtrail.store.queries import load_queries
from jobtrail.store.urls import unencoded_at

T = TypeVar("T")
Conn = AsyncConnection[DictRow]
POOL_MIN, POOL_MAX = 1, 8
CONNECT_TIMEOUT_S = 10
# How long a session that stopped answering may hold what it holds (`dead_after` in the
# URL; 0: PostgreSQL's own defaults, about two hours of TCP keepalive): see `_liveness`.
DEAD_AFTER_S = 60
_OURS = ("pool_min", "pool_max", "dead_after")  # the URL's keys that are jobtrail's, not libpq's
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
    "operation": c.selected(),  # the provider document resolved from its key (0008)
    "operation_o": c.selected("o."),
}
_RAW = load_queries("postgres", fill=_FILL)
Q = {
    name: sql.format(only="", drives="") if name == "claim_due" else sql
    for name, sql in _RAW.items()
}
Q |= load_queries("postgres", "tasks.sql") | load_queries("postgres", "bulk.sql")
Q |= load_queries("postgres", "notices.sql") | load_queries("postgres", "metrics.sql")
_ONE = {"only": "operation_id = %(only)s AND "}
# A CASE, not `provider_kind = 'http' OR provider = ANY(...)`: the OR let the planner combine
# the provider index with the due index in a bitmap scan, which reads every due row and
# sorts them all before the LIMIT (so a claim's cost grew with the backlog: 16 ms for 7,000
# due rows); as a plain filter the claim walks the due index in order and stops at its
# LIMIT (2.4 ms), in generic and custom plans alike (issue 32, bench/RESULTS.md).
_DRIVES = {
    "drives": "CASE WHEN provider_kind = 'http' THEN TRUE "
    "ELSE provider = ANY(%(code)s::text[]) END AND "
}
_NONE = {"only": "", "drives": ""}
Q["claim_one"] = _RAW["claim_due"].format(**_NONE | _ONE)
Q["claim_due_drives"] = _RAW["claim_due"].format(**_NONE | _DRIVES)
Q["claim_one_drives"] = _RAW["claim_due"].format(**_ONE | _DRIVES)


class PgConn:
    """The engine's `Conn` over one pooled connection."""

    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    async def rows(self, sql: str, args: Any = None) -> list[Any]:
        cur = await self.conn.execute(sql, args)
        return await cur.fetchall() if cur.description else []

    async def count(self, sql: str, args: Any = None) -> int:
        return (await self.conn.execute(sql, args)).rowcount

    async def each(self, statements: Sequence[tuple[str, Any]]) -> list[Any | None]:
        (sql,) = {sql for sql, _ in statements}  # one prepared statement, executed many times
        async with self.conn.cursor() as cur:
            await cur.executemany(sql, [args for _, args in statements], returning=True)
            return [await result.fetchone() async for result in cur.results()]

    async def many(self, writes: Sequence[tuple[str, Sequence[Any]]]) -> None:
        async with self.conn.pipeline(), self.conn.cursor() as cur:
            for sql, rows in writes:
                await cur.executemany(sql, rows)


class PostgresStore(Store):
    Q, Q_PRUNE, CODEC, MARK = Q, prune_queries("postgres"), CODEC, "%s"

    def __init__(
        self, pool: AsyncConnectionPool[Conn], key: bytes | None, where: str, secret: str
    ) -> None:
        self._pool, self._where, self._secret = pool, where, secret
        self._chain = AuditChain(key)
        self._clock = ServerClock()

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
        bound = partial(_liveness, seconds=sizes["dead_after"])
        pool = AsyncConnectionPool(
            conninfo,
            connection_class=AsyncConnection[DictRow],
            kwargs={"autocommit": True, "row_factory": dict_row},
            configure=bound,
            min_size=low,
            max_size=max(low, max_size or sizes.get("pool_max", POOL_MAX)),
            timeout=POOL_WAIT_S,
            open=False,
            name="jobtrail",
        )
        try:
            async with await AsyncConnection.connect(conninfo, autocommit=True) as conn:
                await bound(conn)
                await _migrate(conn)
            await pool.open(wait=True, timeout=CONNECT_TIMEOUT_S)
            store = cls(pool, audit_key, where, secret)
            await store._read_clock()
        except StoreError:  # the ledger itself refused (a newer schema)
            await pool.close()
            raise
        except psycopg.Error as exc:
            await pool.close()
            raise StoreError(
                f"cannot open the ledger database at {where} ({_reason(exc, secret)}); check "
                "that the server is running, or set JOBTRAIL_DB / --db to the right ledger"
            ) from None
        return store

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

    async def _read(self, work: Work[T]) -> T:
        """Reads run outside a transaction (a single statement is atomic on its own)."""
        return await self._run(lambda conn: work(PgConn(conn)), transaction=False)

    async def _write(self, work: Work[T], *, sync: bool = True) -> T:
        await self._agree()
        if self._clock.stale():  # a process that writes without claiming (webhooks, people)
            await self._read_clock()

        async def run(conn: Conn) -> T:
            if not sync:
                await conn.execute(Q["relax_commit"])
            return await work(PgConn(conn))

        return await self._run(run)

    async def _agree(self) -> None:
        """Before a write: refuse it when the key cannot continue the chain (a worker without
        the key must not even claim). A first writer fixes the keying under the head's lock,
        when it appends (store/conn.py `Hooks._append_audit`)."""
        if not self._chain.agreed:
            await self._read(partial(self._check_keying, fix=False))

    async def _rows(self, query: str, args: Any = None) -> list[DictRow]:
        """A lease's statement: one, atomic on its own, refused as every write is."""
        await self._agree()
        return await self._read(lambda conn: conn.rows(Q[query], args))

    def array(self, values: Sequence[Any]) -> Any:
        return list(values)

    def lease_clock(self) -> float | None:
        return None  # the SQL reads the server's clock

    def ledger_now(self) -> datetime:
        return self._clock.now()

    async def _read_clock(self) -> None:
        """Read the server's clock (store/ledger_clock.py)."""
        rows = await self._read(lambda conn: conn.rows(Q["ledger_clock"]))
        self._clock.read(float(rows[0]["now"]))

    def update_statement(self, change: Change) -> tuple[str, Any]:
        """One statement for every kind of change, so it is prepared once per connection."""
        op, fence = change.operation, change.owner_fence
        params = CODEC.mutable_row(op)
        params.update(operation_id=op.operation_id, version=op.version, fence=fence)
        params.update(owner=fence is not None, release=change.release)
        params["request_poll"] = change.request_poll
        return Q["update_operation"], params

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
        args = {"now": now, "limit": limit, "owner": owner, "expires": now + lease_for}
        args["lease_s"] = lease_for.total_seconds()
        query = ("claim_one" if only else "claim_due") + ("" if code is None else "_drives")
        rows = await self._rows(query, args | {"only": only, "code": list(code or ())})
        if rows:  # the new leases' end on the server's clock, less their length: its now
            self._clock.read(float(rows[0]["lease_until"]) - lease_for.total_seconds())
        elif self._clock.stale():
            await self._read_clock()
        return [
            Claim(operation=CODEC.operation(row), was_due=row["was_due"].astimezone(UTC))
            for row in rows
        ]

    async def renew(
        self, operation_id: str, fence: int, now: datetime, lease_for: timedelta
    ) -> bool:
        args = {"expires": now + lease_for, "id": operation_id, "fence": fence}
        args["lease_s"] = lease_for.total_seconds()
        return bool((await self._rows("renew", args))[0]["n"] == 1)

    async def release(
        self, operation_id: str, fence: int, now: datetime, due: datetime | None
    ) -> bool:
        args = {"now": now, "due": due, "id": operation_id, "fence": fence}
        return bool((await self._rows("release", args))[0]["n"] == 1)

    async def close(self) -> None:
        await self._pool.close()


async def _migrate(conn: AsyncConnection[Any]) -> None:
    """Apply pending migrations in one transaction, under an advisory lock so that workers
    starting together do not race."""
    async with conn.transaction():
        await conn.execute(Q["begin_migrations"])
        cur = await conn.execute(Q["applied_migrations"])
        done = {row[0] for row in await cur.fetchall()}
        refuse_newer("postgres", done)
        for version, script in migrations("postgres"):
            if version not in done:
                await conn.execute(script)
                await conn.execute(Q["record_migration"], (version, datetime.now(UTC)))


async def _liveness(conn: AsyncConnection[Any], *, seconds: int) -> None:
    """Bound how long this session may hold locks once its client stops answering (a
    partition, a frozen or killed machine), on the server's side, whatever the network in
    between: a transaction left idle that long is ended by the server
    (`idle_in_transaction_session_timeout`: jobtrail's transactions never wait on anything
    but the database, so one idle for `seconds` has lost its client), and a peer that stops
    acknowledging is dropped by TCP (keepalives, `tcp_user_timeout`; ignored on a Unix
    socket). Set per session, so no server setting is needed and a pooler that refuses
    startup options is not asked for any. `seconds` 0 leaves the server's defaults."""
    if seconds <= 0:
        return
    idle, interval, count = _keepalive(seconds)
    await conn.execute(
        Q["bound_session"],
        {
            "idle_ms": str(seconds * 1000),
            "ka_idle": str(idle),
            "ka_interval": str(interval),
            "ka_count": str(count),
        },
    )


def _keepalive(seconds: int) -> tuple[int, int, int]:
    """TCP keepalive (idle, interval, count) that gives a silent peer up in about two thirds
    of `seconds` (at least a second each), the same on the server's side and ours."""
    return max(1, seconds // 3), max(1, seconds // 9), 3


def _parse(url: str) -> tuple[str, dict[str, int], str, str]:
    """The conninfo to connect with (without `pool_min`, `pool_max` and `dead_after`, which
    libpq refuses, and with TCP keepalives of our side unless the URL sets them), those
    numbers (`dead_after` always, defaulted), where it points (user@host:port/dbname), and
    its password, which no message may show."""
    if (problem := unencoded_at(url)) is not None:
        raise StoreError(problem)
    try:
        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=True)
        sizes = {k: v for k, v in query if k in _OURS}
        if sizes:
            rest = urlencode([(k, v) for k, v in query if k not in sizes], quote_via=quote)
            url = urlunsplit(parts._replace(query=rest))
        params = conninfo_to_dict(url)
    except (ValueError, psycopg.Error):
        raise StoreError(
            "the ledger URL is not a valid PostgreSQL connection string; expected "
            "postgresql://user@host:port/dbname (JOBTRAIL_DB / --db selects the ledger)"
        ) from None
    if not all(v.isdigit() and (int(v) > 0 or k == "dead_after") for k, v in sizes.items()):
        raise StoreError(
            "pool_min and pool_max in the ledger URL must be positive whole numbers, and "
            "dead_after a whole number of seconds (0: PostgreSQL's defaults)"
        )
    if "connect_timeout" not in params:
        url = make_conninfo(url, connect_timeout=CONNECT_TIMEOUT_S)
    numbers = {"dead_after": DEAD_AFTER_S} | {k: int(v) for k, v in sizes.items()}
    dead_after = numbers["dead_after"]
    if dead_after > 0 and not any(k.startswith("keepalives") for k in params):
        # our side notices a server that stopped answering as soon (libpq: TCP only)
        idle, interval, count = _keepalive(dead_after)
        url = make_conninfo(
            url,
            keepalives=1,
            keepalives_idle=idle,
            keepalives_interval=interval,
            keepalives_count=count,
            **({} if "tcp_user_timeout" in params else {"tcp_user_timeout": dead_after * 1000}),
        )
    user, host, port, db = (str(params.get(k) or "") for k in ("user", "host", "port", "dbname"))
    where = f"{user}{'@' if user else ''}{host or 'localhost'}:{port or 5432}/{db or user}"
    return url, numbers, where, str(params.get("password") or "")


def _reason(exc: BaseException, secret: str) -> str:
    text = " ".join(str(exc).split()).rstrip(".") or type(exc).__name__
    return Redactor().extended(values=[secret]).text(text) if secret else text
