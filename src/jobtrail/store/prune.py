"""`Store.prune`, written once for both dialects: one write transaction (see
store/retention.py for the protocol). The operations being pruned are the rows of
prune_authorizations, which exist only inside this transaction."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from jobtrail.core.audit import audit_row
from jobtrail.store import codec as c
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

if TYPE_CHECKING:
    from jobtrail.store.conn import Conn, Hooks

_FILL = {"states": ", ".join(f"'{s.value}'" for s in PRUNABLE), "operation": c.selected()}


def prune_queries(dialect: str) -> dict[str, str]:
    return load_queries(dialect, "prune.sql", _FILL)


async def prune(
    store: Hooks,
    conn: Conn,
    finished_before: datetime,
    now: datetime,
    actor: str,
    keep: Keep,
    bind: Bind | None = None,
) -> Pruned:
    """Runs inside the store's write transaction: if `keep` raises, nothing is removed."""
    Q, codec = store.Q_PRUNE, store.CODEC
    await conn.count(Q["unbounded"])  # the archive is written inside this transaction
    await conn.count(Q["clear"])  # stray rows from outside jobtrail authorize nothing of ours
    ops = [
        codec.operation(row)
        for row in await conn.rows(Q["prunable"], {"cutoff": codec.t_out(finished_before)})
    ]
    if ops:
        await conn.many([(Q["authorize"], [(op.operation_id,) for op in ops])])
    audit = [audit_row(row) for row in await conn.rows(Q["audit"])]
    pruned = group(
        ops,
        [codec.transition(row) for row in await conn.rows(Q["transitions"])],
        [codec.attempt(row) for row in await conn.rows(Q["attempts"])],
        [codec.observation(row) for row in await conn.rows(Q["observations"])],
        [codec.lease(row) for row in await conn.rows(Q["leases"])],
        audit,
    )
    checkpoint = None
    if ops:
        heads = await conn.rows(Q["head"])
        archived = bound(bind, pruned, finished_before=finished_before, at=now, actor=actor)
        entry = checkpoint_entry(
            archive=archived,
            now=now,
            actor=actor,
            finished_before=finished_before,
            operation_ids=[op.operation_id for op in ops],
            audit=audit,
            head=(heads[0]["seq"], heads[0]["hash"]) if heads else (0, None),
        )
        # Linked before the deletes: the head may be an entry of a pruned operation.
        await store._append_audit(conn, [entry])
        checkpoint = audit_row((await conn.rows(Q["last_audit"]))[0])
        for statement in Q["delete_owned"].split(";\n"):
            await conn.count(statement)
    await conn.count(Q["clear"])
    expired = await conn.count(Q["expired_tasks"], {"now": codec.t_out(now)})
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
