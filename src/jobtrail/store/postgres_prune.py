"""`PostgresStore.prune`: one transaction (see store/retention.py for the protocol)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from psycopg import AsyncConnection
from psycopg.rows import DictRow

from jobtrail.core.audit import AuditEntry, audit_row
from jobtrail.store import codec as c
from jobtrail.store.leases import CLOCK_FIELDS, Lease
from jobtrail.store.queries import load_queries
from jobtrail.store.retention import (
    PRUNABLE,
    Bind,
    Keep,
    Pruned,
    bound,
    checkpoint_entry,
    group,
)

Conn = AsyncConnection[DictRow]
Q = load_queries(
    "postgres",
    "prune.sql",
    {"states": ", ".join(f"'{s.value}'" for s in PRUNABLE), "operation": c.selected()},
)
Append = Callable[[Conn, Sequence[AuditEntry]], Awaitable[None]]


async def prune(
    conn: Conn,
    codec: c.Codec,
    append: Append,
    finished_before: datetime,
    now: datetime,
    actor: str,
    keep: Keep,
    bind: Bind | None = None,
) -> Pruned:
    """Runs inside the store's transaction: if `keep` raises, nothing is removed."""

    async def rows(name: str, args: Any = None) -> list[DictRow]:
        cur = await conn.execute(Q[name], args)
        return await cur.fetchall() if cur.description else []

    await rows("clear")  # stray rows from outside jobtrail authorize nothing of ours
    ops = [codec.operation(row) for row in await rows("prunable", {"cutoff": finished_before})]
    if ops:
        async with conn.cursor() as cur:
            await cur.executemany(Q["authorize"], [(op.operation_id,) for op in ops])
    audit = [audit_row(row) for row in await rows("audit")]
    pruned = group(
        ops,
        [codec.transition(row) for row in await rows("transitions")],
        [codec.attempt(row) for row in await rows("attempts")],
        [codec.observation(row) for row in await rows("observations")],
        [_lease(row) for row in await rows("leases")],
        audit,
    )
    checkpoint = None
    if ops:
        (head,) = await rows("head")
        archived = bound(bind, pruned, finished_before=finished_before, at=now, actor=actor)
        entry = checkpoint_entry(
            archive=archived,
            now=now,
            actor=actor,
            finished_before=finished_before,
            operation_ids=[op.operation_id for op in ops],
            audit=audit,
            head=(head["seq"], head["hash"]),
        )
        await append(conn, [entry])
        checkpoint = audit_row((await rows("last_audit"))[0])
        for statement in Q["delete_owned"].split(";\n"):
            await conn.execute(statement)
    await rows("clear")
    expired = (await conn.execute(Q["expired_tasks"], {"now": now})).rowcount
    result = Pruned(
        finished_before=finished_before,
        at=now,
        actor=actor,
        checkpoint=checkpoint,
        operations=pruned,
        expired_tasks=expired,
    )
    keep(result)
    return result


def _lease(row: DictRow) -> Lease:
    released = row["released_at"]
    return Lease(
        operation_id=row["operation_id"],
        fence=row["fence"],
        owner=row["owner"],
        acquired_at=row["acquired_at"].astimezone(UTC),
        expires_at=row["expires_at"].astimezone(UTC),
        released_at=None if released is None else released.astimezone(UTC),
        **{name: row[name] for name in CLOCK_FIELDS},
    )
