"""Retention: what `prune` removes and the checkpoint it leaves (shared by both stores).

Pruning is the one way rows leave the ledger. A store's `prune` runs in one transaction:
it lists the finished operations last changed before the cut-off, authorizes exactly those
in `prune_authorizations` (the delete triggers of migration 0004 let no other row go), reads
everything they own, deletes it, appends a checkpoint entry to the audit chain and hands
the records to `keep` (which writes the archive) before the commit. If `keep` fails,
nothing is removed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from jobtrail.core.audit import CHECKPOINT, AuditEntry, AuditRow, cuts_of, hex_of
from jobtrail.core.model import Attempt, Observation, Operation, Transition
from jobtrail.core.states import State
from jobtrail.store.leases import Lease

# Finished for good: automation has ended and no person or deadline can reopen them.
# result_timed_out (reversible by `extend`), cancellation_unconfirmed and needs_human (a
# remote job may still run, a person is expected) stay until they reach one of these.
PRUNABLE = (
    State.SUCCEEDED,
    State.FAILED,
    State.CANCELLED,
    State.RESULT_UNAVAILABLE,
    State.RESULT_VALIDATION_FAILED,
)


@dataclass(frozen=True, kw_only=True)
class PrunedOperation:
    """One operation as it left the ledger, with everything it owned."""

    operation: Operation
    history: Sequence[Transition]
    attempts: Sequence[Attempt]
    observations: Sequence[Observation]
    leases: Sequence[Lease]
    audit: Sequence[AuditRow]


@dataclass(frozen=True, kw_only=True)
class Pruned:
    finished_before: datetime
    at: datetime
    actor: str
    checkpoint: AuditRow | None  # None when nothing was finished before the cut-off
    operations: Sequence[PrunedOperation]
    expired_tasks: int = 0  # task handles past their time to live, removed (not archived)

    @property
    def entries(self) -> int:
        return sum(len(p.audit) for p in self.operations)


Keep = Callable[[Pruned], None]
# What the checkpoint binds of the archive `keep` writes (ledger/archive.py `binding`),
# given the records before the checkpoint exists; None: nothing is archived, nothing bound.
Bind = Callable[[Pruned], dict[str, Any]]


@dataclass(frozen=True, kw_only=True)
class PackDictionary:
    """A zstd dictionary stored in the ledger (migration 0023), named by its id."""

    dictionary_id: int
    digest: str  # sha256 of `data`, hex: what a packing checkpoint binds
    data: bytes
    samples: int = 0  # how many operations' encodings it was trained on


@dataclass(frozen=True, kw_only=True)
class PackedBatch:
    """What packing makes of a batch (ledger/packing.py), before its checkpoint exists."""

    rows: Sequence[tuple[str, int | None, bytes]]  # (operation_id, dictionary_id, data)
    trained: PackDictionary | None  # a dictionary trained on this batch, to store with it
    binding: dict[str, Any]  # what the checkpoint binds of the packed rows


# Packs a batch given the ledger's newest dictionary (None: none trained yet).
Seal = Callable[[Sequence["PrunedOperation"], PackDictionary | None], PackedBatch]


def bound(bind: Bind | None, pruned: Sequence[PrunedOperation], **fields: Any) -> Any:
    """The archive binding of `pruned` (see Bind), or None."""
    if bind is None:
        return None
    return bind(Pruned(checkpoint=None, operations=pruned, **fields))


def checkpoint_entry(
    *,
    now: datetime,
    actor: str,
    finished_before: datetime,
    operation_ids: Sequence[str],
    audit: Sequence[AuditRow],
    head: tuple[int, str | bytes | None],
    archive: Any = None,
    pack: Any = None,
) -> AuditEntry:
    """The entry that lets `audit verify` walk across the removed entries: each run of
    removed seqs with the hash before it and the hash of its last entry (see audit.Cut);
    with `archive` (see Bind), what it binds of the archive that keeps them; with `pack`
    (see PackedBatch), what it binds of the packed rows that keep them in the ledger."""
    removed = {row.seq for row in audit}
    return AuditEntry(
        at=now,
        operation_id=None,
        kind=CHECKPOINT,
        actor=actor,
        data={
            "finished_before": finished_before.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "operations": list(operation_ids),
            "entries": len(removed),
            "cuts": [cut.doc() for cut in cuts_of(sorted(audit, key=_seq), removed)],
            "head_before": {"seq": head[0], "hash": hex_of(head[1])},
            **({"archive": archive} if archive is not None else {}),
            **({"pack": pack} if pack is not None else {}),
        },
    )


def _seq(row: AuditRow) -> int:
    return row.seq


def group(
    ops: Sequence[Operation],
    history: Sequence[Transition],
    attempts: Sequence[Attempt],
    observations: Sequence[Observation],
    leases: Sequence[Lease],
    audit: Sequence[AuditRow],
) -> list[PrunedOperation]:
    """Records read for many operations at once, sorted out per operation."""

    def by_op(records: Sequence[Any], key: Callable[[Any], Any]) -> dict[str, list[Any]]:
        found: dict[str, list[Any]] = defaultdict(list)
        for record in records:
            found[key(record)].append(record)
        return found

    owned = [
        by_op(records, lambda r: r.operation_id)
        for records in (history, attempts, observations, leases)
    ]
    audited = by_op(audit, lambda r: r.columns.get("operation_id"))
    return [
        PrunedOperation(
            operation=op,
            history=owned[0].get(op.operation_id, []),
            attempts=owned[1].get(op.operation_id, []),
            observations=owned[2].get(op.operation_id, []),
            leases=owned[3].get(op.operation_id, []),
            audit=audited.get(op.operation_id, []),
        )
        for op in ops
    ]
