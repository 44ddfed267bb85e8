"""`seen_again` (store/seen.py): a status read whose answer equals its owner's last one is
recorded as a folded unchanged read is (the open run's count and last time, the poll
count and time, the lease given back), and refused, writing nothing, unless the record is
still the one that owner's last write left with its status run open."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from jobtrail.core.model import Operation
from jobtrail.core.states import State
from jobtrail.store import Store
from jobtrail.store.changes import Change, Verdict
from jobtrail.store.seen import SeenAgain

from contract_records import LEASE, at, attempt, finished, observation, operation, step


async def _leased(store: Store) -> Operation:
    op = operation(1, next_poll_at=at(0), state=State.OBSERVING, remote_job_id="j1")
    await store.create_operation(op, [])
    (claim,) = await store.claim_due("worker:a", at(1), 1, LEASE)
    return claim.operation


async def _commit(store: Store, change: Change) -> Operation:
    (result,) = await store.commit([change])
    assert result.verdict is Verdict.OK and result.operation is not None
    return result.operation


async def _rows(store: Store, op: Operation) -> tuple[int, int, int]:
    oid = op.operation_id
    return (
        len(await store.observations(oid)),
        len(await store.attempts(oid)),
        len(await store.audit_rows(oid)),
    )


async def _read_once(store: Store) -> Operation:
    """A leased operation whose first status read (RUNNING) opened a run; still leased."""
    op = await _leased(store)
    done = finished(attempt(op, at(2)), at(2))
    read = replace(
        step(op, at(2), fence=op.fence),
        observations=[observation(op, at(2))],
        safe_read=done,
        audit=[],
    )
    return await _commit(store, read)


def _again(op: Operation, second: float, due: datetime | None, **fields: object) -> SeenAgain:
    read = SeenAgain(
        operation_id=op.operation_id,
        fence=op.fence,
        version=op.version,
        at=at(second),
        next_poll_at=due,
        poll_count=op.poll_count + 1,
        request_id=f"preq_{second:g}",
    )
    return replace(read, **fields)  # type: ignore[arg-type]


async def test_a_read_seen_again_folds_into_the_run_and_gives_the_lease_back(
    store: Store,
) -> None:
    """One more read of the open run, the record's poll moved on and its lease released,
    with no row of its own: what a folded unchanged read leaves."""
    op = await _read_once(store)
    rows = await _rows(store, op)
    stored = await store.seen_again(_again(op, 3, at(4)))
    assert stored is not None and stored.version == op.version + 1
    assert stored.next_poll_at == at(4)
    after = await store.get(op.operation_id)
    assert after is not None
    assert (after.version, after.poll_count, after.next_poll_at, after.updated_at) == (
        op.version + 1,
        op.poll_count + 1,
        at(4),
        at(3),
    )
    assert after.lease_owner is None and after.lease_expires_at is None
    (run,) = await store.observations(op.operation_id)
    assert (run.seen_count, run.last_seen_at, run.request_id) == (2, at(3), "preq_3")
    assert run.closed_at is None and await _rows(store, op) == rows
    (lease,) = await store.leases(op.operation_id)
    assert lease.fence == op.fence and lease.released_at == at(3)


async def test_a_read_seen_again_is_refused_once_the_record_moved(store: Store) -> None:
    """Another version, another fence, or no open status run: nothing is written."""
    op = await _read_once(store)
    rows = await _rows(store, op)
    assert await store.seen_again(_again(op, 3, at(4), version=op.version + 1)) is None
    assert await store.seen_again(_again(op, 3, at(4), fence=op.fence + 1)) is None
    assert await store.get(op.operation_id) == op
    (run,) = await store.observations(op.operation_id)
    assert run.seen_count == 1 and await _rows(store, op) == rows
    # a failed read (an attempt, no observation) closes the run: nothing left to fold into
    failed = replace(
        step(op, at(3), fence=op.fence),
        safe_read=finished(attempt(op, at(3), 1), at(3), 500),
        audit=[],
    )
    op = await _commit(store, failed)
    assert await store.seen_again(_again(op, 4, at(5))) is None
    assert (await store.get(op.operation_id)) == op


async def test_a_poll_asked_for_meanwhile_makes_it_due_at_once(store: Store) -> None:
    """A non-owner's request for a read while the lease was held (a webhook's) is honoured
    as any releasing write honours it: due at the read's time, not at its own."""
    op = await _read_once(store)
    ask = replace(step(op, at(2.5)), owner_fence=None, audit=[], request_poll=True)
    op = await _commit(store, ask)
    stored = await store.seen_again(_again(op, 3, at(60)))
    assert stored is not None and stored.next_poll_at == at(3)
    after = await store.get(op.operation_id)
    assert after is not None and after.next_poll_at == at(3)
