"""`Store.prune`, written once for both dialects: one write transaction (see
store/retention.py for the protocol). The operations being pruned are the rows of
prune_authorizations, which exist only inside this transaction."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from jobtrail.core.audit import audit_row
from jobtrail.store import codec as c
from jobtrail.store.queries import load_queries
from jobtrail.store.retention import (
    PRUNABLE,
    Bind,
    Keep,
    PackDictionary,
    PackedBatch,
    Pruned,
    Seal,
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
    seal: Seal | None = None,
    limit: int = 0,
) -> Pruned:
    """Runs inside the store's write transaction: if `keep` raises, nothing is removed.
    With `seal`, packs (migration 0023) at most `limit` operations instead: their rows are
    replaced by the packed rows `seal` makes, which the checkpoint binds."""
    Q, codec = store.Q_PRUNE, store.CODEC
    await conn.count(Q["unbounded"])  # the archive is written inside this transaction
    await conn.count(Q["clear"])  # stray rows from outside jobtrail authorize nothing of ours
    cutoff = codec.t_out(finished_before)
    if seal is None:
        selected = await conn.rows(Q["prunable"], {"cutoff": cutoff})
    else:
        selected = await conn.rows(Q["packable"], {"cutoff": cutoff, "limit": limit})
    ops = [codec.operation(row) for row in selected]
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
    checkpoint, sealed = None, None
    if ops:
        heads = await conn.rows(Q["head"])
        archived = bound(bind, pruned, finished_before=finished_before, at=now, actor=actor)
        if seal is not None:
            sealed = seal(pruned, await newest_dictionary(store, conn))
        entry = checkpoint_entry(
            archive=archived,
            pack=sealed.binding if sealed is not None else None,
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
        if sealed is not None:
            await _store_packed(store, conn, sealed, now)
    await conn.count(Q["clear"])
    expired = 0
    if seal is None:  # packing leaves task handles to prune
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


async def _store_packed(store: Hooks, conn: Conn, sealed: PackedBatch, now: datetime) -> None:
    Q = store.Q_PRUNE
    if (new := sealed.trained) is not None:
        row = (new.dictionary_id, new.digest, new.data, store.CODEC.t_out(now), new.samples)
        await conn.many([(Q["insert_dictionary"], [row])])
    await conn.many([(Q["insert_packed"], list(sealed.rows))])


async def newest_dictionary(store: Hooks, conn: Conn) -> PackDictionary | None:
    rows = await conn.rows(store.Q_PRUNE["newest_dictionary"])
    return _dictionary(rows[0]) if rows else None


def _dictionary(row: Any) -> PackDictionary:
    return PackDictionary(
        dictionary_id=int(row["dictionary_id"]), digest=str(row["digest"]), data=bytes(row["data"])
    )


async def dictionaries(store: Hooks, conn: Conn) -> dict[int, PackDictionary]:
    """Every dictionary the ledger holds, by id."""
    found = [_dictionary(row) for row in await conn.rows(store.Q_PRUNE["dictionaries"])]
    return {d.dictionary_id: d for d in found}


async def packed(
    store: Hooks, conn: Conn, operation_id: str | None
) -> list[tuple[str, int | None, bytes]]:
    """The packed rows (operation_id, dictionary_id, data): one operation's, or all."""
    Q = store.Q_PRUNE
    if operation_id is None:
        rows = await conn.rows(Q["all_packed"])
    else:
        rows = await conn.rows(Q["packed"], (operation_id,))
    return [
        (
            str(r["operation_id"]),
            None if r["dictionary_id"] is None else int(r["dictionary_id"]),
            bytes(r["data"]),
        )
        for r in rows
    ]
