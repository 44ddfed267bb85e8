"""`SqliteStore.prune`: one write transaction (see store/retention.py for the protocol)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime

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

Q = load_queries(
    "sqlite",
    "prune.sql",
    {"states": ", ".join(f"'{s.value}'" for s in PRUNABLE), "operation": c.selected()},
)
Append = Callable[[sqlite3.Connection, Sequence[AuditEntry]], None]


def prune(
    conn: sqlite3.Connection,
    codec: c.Codec,
    append: Append,
    finished_before: datetime,
    now: datetime,
    actor: str,
    keep: Keep,
    bind: Bind | None = None,
) -> Pruned:
    """Runs inside the store's write transaction: if `keep` raises, nothing is removed."""
    conn.execute(Q["clear"])  # stray rows from outside jobtrail authorize nothing of ours
    ops = [
        codec.operation(row)
        for row in conn.execute(Q["prunable"], {"cutoff": codec.t_out(finished_before)})
    ]
    conn.executemany(Q["authorize"], [(op.operation_id,) for op in ops])

    def rows(name: str) -> list[sqlite3.Row]:
        return conn.execute(Q[name]).fetchall()

    audit = [audit_row(row) for row in rows("audit")]
    pruned = group(
        ops,
        [codec.transition(row) for row in rows("transitions")],
        [codec.attempt(row) for row in rows("attempts")],
        [codec.observation(row) for row in rows("observations")],
        [_lease(codec, row) for row in rows("leases")],
        audit,
    )
    checkpoint = None
    if ops:
        head = conn.execute(Q["head"]).fetchone()
        archived = bound(bind, pruned, finished_before=finished_before, at=now, actor=actor)
        entry = checkpoint_entry(
            archive=archived,
            now=now,
            actor=actor,
            finished_before=finished_before,
            operation_ids=[op.operation_id for op in ops],
            audit=audit,
            head=(head[0], head[1]) if head else (0, None),
        )
        # Linked before the deletes: the head may be an entry of a pruned operation.
        append(conn, [entry])
        checkpoint = audit_row(conn.execute(Q["last_audit"]).fetchone())
        for statement in Q["delete_owned"].split(";\n"):
            conn.execute(statement)
    conn.execute(Q["clear"])
    expired = conn.execute(Q["expired_tasks"], {"now": codec.t_out(now)}).rowcount
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


def _lease(codec: c.Codec, row: sqlite3.Row) -> Lease:
    return Lease(
        operation_id=row["operation_id"],
        fence=row["fence"],
        owner=row["owner"],
        acquired_at=datetime.fromisoformat(row["acquired_at"]),
        expires_at=datetime.fromisoformat(row["expires_at"]),
        released_at=codec.t_in(row["released_at"]),
        **{name: row[name] for name in CLOCK_FIELDS},
    )
