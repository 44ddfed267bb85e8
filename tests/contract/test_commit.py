"""commit: guarded, all-or-nothing writes of many operations' steps."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from jobtrail.core.audit import verify
from jobtrail.core.model import Operation
from jobtrail.core.states import State
from jobtrail.store import Change, Store
from jobtrail.store.changes import Verdict

from contract_records import (
    LEASE,
    SHORT,
    at,
    attempt,
    entry,
    finished,
    observation,
    operation,
    outlive,
    step,
)


async def _created(store: Store, n: int, **fields: object) -> Operation:
    op = operation(n, **fields)  # type: ignore[arg-type]
    await store.create_operation(op, [entry(op, "operation.submitted")])
    return op


async def _leased(
    store: Store, n: int, owner: str = "worker:a", lease_for: timedelta = LEASE
) -> Operation:
    await _created(store, n, next_poll_at=at(0))
    (claim,) = await store.claim_due(owner, at(1), 1, lease_for)
    return claim.operation


async def _appended(store: Store, op: Operation) -> tuple[int, int, int, int]:
    oid = op.operation_id
    return (
        len(await store.history(oid)),
        len(await store.observations(oid)),
        len(await store.attempts(oid)),
        len(await store.audit_rows()),
    )


async def test_ok_appends_everything_and_bumps_the_version(store: Store) -> None:
    """An accepted change stores the new record (version + 1) and appends its transitions,
    observations, attempt and audit entries."""
    op = await _leased(store, 1)
    att = attempt(op, at(2))
    begun = Change(
        operation=replace(op, inflight_attempt=att.attempt_id, updated_at=at(2)),
        owner_fence=op.fence,
        attempt_started=att,
        audit=[entry(op, "attempt.intent", at(2))],
    )
    (first,) = await store.commit([begun])
    assert first.verdict is Verdict.OK and first.operation is not None
    assert first.operation.version == op.version + 1
    assert first.operation.inflight_attempt == att.attempt_id
    change = step(first.operation, at(3), fence=op.fence, to=State.ACCEPTED, remote_job_id="j1")
    change = replace(
        change,
        observations=[observation(op, at(3))],
        attempt_finished=finished(att, at(3)),
    )
    (result,) = await store.commit([change])
    assert result.verdict is Verdict.OK
    assert result.operation == replace(change.operation, version=op.version + 2)
    assert await store.get(op.operation_id) == result.operation
    assert [t.to_state for t in await store.history(op.operation_id)] == [State.ACCEPTED]
    assert await store.observations(op.operation_id) == list(change.observations)
    assert await store.attempts(op.operation_id) == [finished(att, at(3))]
    assert [r.entry for r in await store.audit_rows()][1:] == [
        e.canonical() for e in (*begun.audit, *change.audit)
    ]


async def test_version_guard_refuses_a_stale_change(store: Store) -> None:
    """A change derived from an old version is STALE, returns the current record and
    writes nothing at all."""
    op = await _created(store, 1)
    (ok,) = await store.commit([step(op, at(2))])
    before = await _appended(store, op)
    stale = step(op, at(3), to=State.ACCEPTED)
    stale = replace(
        stale, observations=[observation(op, at(3))], attempt_started=attempt(op, at(3))
    )
    (result,) = await store.commit([stale])
    assert result.verdict is Verdict.STALE
    assert result.operation == ok.operation
    assert await store.get(op.operation_id) == ok.operation
    assert await _appended(store, op) == before


async def test_change_to_an_unknown_operation_is_stale(store: Store) -> None:
    """A change for an operation that does not exist is STALE with no record."""
    (result,) = await store.commit([step(operation(9), at(1))])
    assert result.verdict is Verdict.STALE and result.operation is None


async def test_fence_guard_keeps_only_the_finished_attempt(store: Store) -> None:
    """After a takeover the old owner's change is FENCED_OUT: its finished attempt (a fact)
    and its audit entries are recorded; the record, history and observations are not."""
    op = await _leased(store, 1, owner="worker:a", lease_for=SHORT)
    att = attempt(op, at(2))
    (begun,) = await store.commit(
        [Change(operation=replace(op, updated_at=at(2)), owner_fence=op.fence, attempt_started=att)]
    )
    assert begun.operation is not None
    await outlive()
    (taken,) = await store.claim_due("worker:b", at(1) + SHORT, 1, LEASE)
    assert taken.operation.fence == op.fence + 1
    late = step(begun.operation, at(40), fence=op.fence, to=State.ACCEPTED)
    outcome = entry(op, "attempt.outcome", at(40))
    late = replace(
        late,
        observations=[observation(op, at(40))],
        attempt_finished=finished(att, at(40)),
        audit=[*late.audit, outcome],
    )
    audit_before = len(await store.audit_rows())
    (result,) = await store.commit([late])
    assert result.verdict is Verdict.FENCED_OUT
    assert result.operation == taken.operation
    assert await store.get(op.operation_id) == taken.operation
    assert await store.history(op.operation_id) == []
    assert await store.observations(op.operation_id) == []
    assert await store.attempts(op.operation_id) == [finished(att, at(40))]
    # Only the outcome of the call it made is audited: its step was never applied.
    appended = (await store.audit_rows())[audit_before:]
    assert [row.entry for row in appended] == [outcome.canonical()]


async def test_a_fenced_out_intent_leaves_no_attempt_and_no_entry(store: Store) -> None:
    """An owner whose lease was taken over before it recorded a call's intent never makes
    the call: nothing of it is recorded, so no audit entry binds an attempt that is not in
    the attempts table (audit verify would call it deleted)."""
    op = await _leased(store, 1, owner="worker:a", lease_for=SHORT)
    await outlive()
    (taken,) = await store.claim_due("worker:b", at(1) + SHORT, 1, LEASE)
    assert taken.operation.fence == op.fence + 1
    intent = Change(
        operation=replace(op, updated_at=at(2)),
        owner_fence=op.fence,
        attempt_started=attempt(op, at(2)),
        audit=[entry(op, "attempt.intent", at(2))],
    )
    audit_before = len(await store.audit_rows())
    (result,) = await store.commit([intent])
    assert result.verdict is Verdict.FENCED_OUT
    assert await store.attempts(op.operation_id) == []
    assert len(await store.audit_rows()) == audit_before


async def test_a_group_commit_applies_each_change_on_its_own(store: Store) -> None:
    """In one commit, refused changes (stale, fenced out, unknown) write nothing but what
    the contract keeps, the others are applied; results come in the order of the changes."""
    ops = [await _created(store, n) for n in range(6)]
    (moved,) = await store.commit([step(ops[2], at(10))])  # makes ops[2] as read stale
    (taken,) = await store.claim_due("worker:b", at(10), 1, LEASE, only=ops[4].operation_id)
    changes = [step(op, at(20), to=State.ACCEPTED) for op in ops]
    changes[4] = step(ops[4], at(20), fence=ops[4].fence, to=State.ACCEPTED)  # before the claim
    changes.append(step(operation(99), at(20)))  # unknown operation
    results = await store.commit(changes)
    ok, stale, fenced = Verdict.OK, Verdict.STALE, Verdict.FENCED_OUT
    assert [r.verdict for r in results] == [ok, ok, stale, ok, fenced, ok, stale]
    assert results[2].operation == moved.operation
    assert results[4].operation == taken.operation
    assert results[6].operation is None
    for op, result in zip(ops, results, strict=False):
        assert result.operation == await store.get(op.operation_id)
    assert [len(await store.history(op.operation_id)) for op in ops] == [1, 1, 0, 1, 0, 1]
    # the fenced-out change made no call: its step was not applied, so nothing is audited
    assert len(await store.audit_rows()) == 6 + 1 + 4
    assert verify(await store.audit_rows(), None).ok


async def test_two_changes_of_one_operation_in_a_group(store: Store) -> None:
    """Two changes derived from the same version in one commit: the first wins, the second
    is STALE and sees the first's result."""
    op = await _created(store, 1)
    first, second = step(op, at(2), to=State.ACCEPTED), step(op, at(3), to=State.FAILED)
    results = await store.commit([first, second])
    assert [r.verdict for r in results] == [Verdict.OK, Verdict.STALE]
    assert results[1].operation == results[0].operation
    assert [t.to_state for t in await store.history(op.operation_id)] == [State.ACCEPTED]


async def test_non_owner_write_keeps_the_poll_time_of_a_leased_operation(store: Store) -> None:
    """A write without a fence never moves next_poll_at of a leased operation (its owner
    decides it), but does for an unleased one."""
    leased = await _leased(store, 1)
    free = await _created(store, 2, next_poll_at=at(500))
    changes = [step(op, at(5), next_poll_at=at(6), progress={"p": 5}) for op in (leased, free)]
    results = await store.commit(changes)
    assert [r.verdict for r in results] == [Verdict.OK, Verdict.OK]
    now_leased, now_free = (r.operation for r in results)
    assert now_leased is not None and now_free is not None
    assert now_leased.next_poll_at == leased.next_poll_at == at(0)
    assert now_leased.lease_expires_at == at(1) + LEASE
    assert now_leased.lease_owner == "worker:a" and now_leased.fence == leased.fence
    assert now_free.next_poll_at == at(6)


async def test_owner_write_stores_the_poll_time_apart_from_the_lease(store: Store) -> None:
    """An owner's writes store the poll time its step decided while the lease alone keeps
    the operation from other workers until it expires; the releasing write stores it too."""
    op = await _leased(store, 1)
    (kept,) = await store.commit([step(op, at(7), fence=op.fence, next_poll_at=at(8))])
    assert kept.verdict is Verdict.OK and kept.operation is not None
    assert kept.operation.next_poll_at == at(8)
    assert kept.operation.lease_expires_at == op.lease_expires_at == at(1) + LEASE
    assert kept.operation.lease_owner == "worker:a"
    assert await store.claim_due("worker:b", at(9), 5, LEASE) == []
    assert await store.next_due() == at(1) + LEASE
    last = replace(step(kept.operation, at(9), fence=op.fence, next_poll_at=at(12)), release=True)
    (released,) = await store.commit([last])
    assert released.operation is not None and released.operation.next_poll_at == at(12)


async def test_release_clears_the_lease_and_stamps_it(store: Store) -> None:
    """An owner's change with release=True drops the lease and records when it ended."""
    op = await _leased(store, 1)
    change = replace(step(op, at(9), fence=op.fence, next_poll_at=at(60)), release=True)
    (result,) = await store.commit([change])
    assert result.verdict is Verdict.OK and result.operation is not None
    assert result.operation.lease_owner is None and result.operation.lease_expires_at is None
    assert result.operation.next_poll_at == at(60)
    assert result.operation.fence == op.fence
    (lease,) = await store.leases(op.operation_id)
    assert lease.released_at == at(9)


async def test_duplicate_event_writes_nothing(store: Store) -> None:
    """An observation whose event id was recorded before makes the change DUPLICATE_EVENT,
    and nothing of it is written."""
    op = await _created(store, 1)
    (ok,) = await store.commit(
        [replace(step(op, at(2)), observations=[observation(op, at(2), "ev_1")])]
    )
    assert ok.operation is not None
    before = await _appended(store, op)
    again = step(ok.operation, at(3), to=State.ACCEPTED)
    again = replace(again, observations=[observation(op, at(3), "ev_1")])
    (dup,) = await store.commit([again])
    assert dup.verdict is Verdict.DUPLICATE_EVENT
    assert dup.operation == ok.operation == await store.get(op.operation_id)
    assert await _appended(store, op) == before


async def test_duplicate_event_within_one_group(store: Store) -> None:
    """The same event id twice in one commit: the first change records it, the second is
    DUPLICATE_EVENT; a refused first change does not make the second a duplicate."""
    a, b, c, d = [await _created(store, n) for n in range(4)]
    (moved,) = await store.commit([step(c, at(1))])  # c as read is now stale
    results = await store.commit(
        [
            replace(step(a, at(2)), observations=[observation(a, at(2), "ev_x")]),
            replace(step(b, at(2)), observations=[observation(b, at(2), "ev_x")]),
            replace(step(c, at(2)), observations=[observation(c, at(2), "ev_y")]),
            replace(step(d, at(2)), observations=[observation(d, at(2), "ev_y")]),
        ]
    )
    assert [r.verdict for r in results] == [
        Verdict.OK,
        Verdict.DUPLICATE_EVENT,
        Verdict.STALE,
        Verdict.OK,
    ]
    assert results[1].operation == await store.get(b.operation_id)
    assert results[2].operation == moved.operation
    assert [len(await store.observations(op.operation_id)) for op in (a, b, c, d)] == [1, 0, 0, 1]


async def test_an_empty_commit_does_nothing(store: Store) -> None:
    """commit([]) returns no results and writes nothing."""
    assert await store.commit([]) == []
    assert await store.audit_rows() == []


async def test_a_status_read_asked_for_during_a_lease_happens_on_release(store: Store) -> None:
    """A non-owner asking for a read while a worker holds the operation: the owner's
    releasing write makes it due at once instead of at the owner's own next time."""
    op = await _leased(store, 1)
    nudge = Change(operation=replace(op, next_poll_at=at(3), updated_at=at(3)), request_poll=True)
    (nudged,) = await store.commit([nudge])
    assert nudged.verdict is Verdict.OK and nudged.operation is not None
    assert nudged.operation.next_poll_at == op.next_poll_at  # the owner still decides
    later = replace(nudged.operation, next_poll_at=at(60), updated_at=at(4))
    (released,) = await store.commit([Change(operation=later, owner_fence=op.fence, release=True)])
    assert released.operation is not None and released.operation.next_poll_at == at(4)
    again = replace(released.operation, next_poll_at=at(90), updated_at=at(5))
    (claim,) = await store.claim_due("worker:b", at(5), 1, LEASE)
    done = replace(again, version=claim.operation.version, fence=claim.operation.fence)
    (plain,) = await store.commit([Change(operation=done, owner_fence=done.fence, release=True)])
    assert plain.operation is not None and plain.operation.next_poll_at == at(90)  # used once


async def test_an_ended_operation_stays_unscheduled_despite_a_request(store: Store) -> None:
    """A requested read never reschedules an operation whose owner ended it."""
    op = await _leased(store, 1)
    (nudged,) = await store.commit([Change(operation=op, request_poll=True)])
    assert nudged.operation is not None
    ended = replace(nudged.operation, state=State.FAILED, next_poll_at=None, updated_at=at(4))
    (released,) = await store.commit([Change(operation=ended, owner_fence=op.fence, release=True)])
    assert released.operation is not None and released.operation.next_poll_at is None
