"""The fault-injection suite: every failure the source article names, against the simulator
over loopback HTTP with a real ledger and the real worker (virtual clock). What turns on the
store (a race with the cancel, a duplicate observation, a stale lease holder's fenced write)
runs on SQLite and PostgreSQL; what turns on the provider's answers, on SQLite."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from jobtrail.core import outcomes as o
from jobtrail.core.model import AttemptKind
from jobtrail.core.states import RemoteStatus, State
from jobtrail.errors import ActionRefused, LostOwnership
from jobtrail.presentation.explain import escalation_bundle, explain_text

from harness import Harness

S = State


@pytest.mark.sqlite_only
async def test_dropped_create_answer_is_reconciled_to_one_job(rig: Harness) -> None:
    """Create accepted but the answer lost: same-token retry + lookup find the one job."""
    op = await rig.submit({"account": "a", "_sim": {"drop_create_answer": True}})
    await rig.run()
    op = await rig.op(op)
    assert op.state is S.SUCCEEDED
    assert len(rig.jobs_for(op)) == 1 and op.remote_job_id == rig.jobs_for(op)[0].job_id
    assert await rig.path(op) == [
        S.CREATE_PENDING,
        S.CREATE_UNKNOWN,
        S.RECONCILIATION,
        S.ACCEPTED,
        S.OBSERVING,
        S.RESULT_COLLECTING,
        S.SUCCEEDED,
    ]
    creates = rig.calls(op, "create")
    assert len(creates) == 2 and {c.idempotency_key for c in creates} == {op.idempotency_token}


async def test_completion_racing_the_cancel_is_reported_as_succeeded(rig: Harness) -> None:
    """The job completes while the cancel is in flight: succeeded, with the cancel visible."""
    op = await rig.submit({"account": "a", "_sim": {"cancel": "race", "duration_polls": 50}})
    await rig.until(op, S.OBSERVING)
    requested = await rig.rt.ledger.cancel(op.operation_id, actor="alice", reason="not needed")
    assert requested.state is S.CANCEL_REQUESTED
    await rig.run()
    op = await rig.op(op)
    assert op.state is S.SUCCEEDED
    path = await rig.path(op)
    assert path[-5:] == [
        S.OBSERVING,
        S.CANCEL_REQUESTED,
        S.CANCELLING,
        S.RESULT_COLLECTING,
        S.SUCCEEDED,
    ]
    assert len(rig.calls(op, "cancel")) == 1
    store = rig.rt.ledger.store
    text = explain_text(
        op,
        await rig.history(op),
        await store.attempts(op.operation_id),
        await store.observations(op.operation_id),
        rig.clock.now(),
    )
    # issue 31: the order is said only from recorded times (here the provider's own)
    assert "succeeded, not cancelled: the job ended succeeded at " in text
    assert "by the provider's own clock" in text and "completed after the cancel" not in text


async def test_the_same_observation_delivered_twice_has_one_effect(rig: Harness) -> None:
    """A duplicated terminal observation moves the operation once; the copy is refused."""
    op = await rig.submit({"account": "a", "_sim": {"duration_polls": 50}})
    op = await rig.until(op, S.OBSERVING)
    ledger, store = rig.rt.ledger, rig.rt.ledger.store
    (claim,) = await store.claim_due(
        "w2", rig.clock.now() + timedelta(hours=1), 1, timedelta(seconds=60)
    )
    held = claim.operation
    done = o.Observed(remote_state="succeeded", remote_status=RemoteStatus.SUCCEEDED)
    held, attempt = await ledger.begin_call(held, AttemptKind.STATUS, {}, "w2")
    after = await ledger.finish_call(held, attempt, done, detail={}, actor="w2")
    assert after.state is S.RESULT_COLLECTING
    before = await store.history(op.operation_id)
    with pytest.raises(ActionRefused):
        await ledger.finish_call(after, attempt, done, detail={}, actor="w2")
    assert await store.history(op.operation_id) == before
    assert [t.to_state for t in before].count(S.RESULT_COLLECTING) == 1


async def test_a_stale_lease_holder_is_refused(rig: Harness) -> None:
    """A worker whose lease expired and was taken over cannot write; the new owner keeps it.
    (The lease is short and runs out for real: leases end on the ledger's clock.)"""
    ledger, store, lease = rig.rt.ledger, rig.rt.ledger.store, timedelta(milliseconds=300)
    op = await rig.submit({"account": "a"})
    (stale,) = await store.claim_due("worker-A", rig.clock.now(), 1, lease)
    stale_op, attempt = await ledger.begin_call(stale.operation, AttemptKind.CREATE, {}, "worker-A")
    await asyncio.sleep(0.35)  # worker-A stalls past its lease
    rig.clock.advance(1)
    (fresh,) = await store.claim_due("worker-B", rig.clock.now(), 1, timedelta(seconds=30))
    assert fresh.operation.fence == stale.operation.fence + 1
    accepted = o.Accepted(job_id="job_x", remote_state="queued", remote_status=RemoteStatus.RUNNING)
    with pytest.raises(LostOwnership):
        await ledger.finish_call(stale_op, attempt, accepted, detail={}, actor="worker-A")
    current = await rig.op(op)
    assert current.remote_job_id is None and current.lease_owner == "worker-B"
    assert await rig.history(op) == []
    late = [a for a in await store.attempts(op.operation_id) if a.actor == "worker-A"]
    assert late[0].outcome == "accepted"  # the late answer is kept as a fact, not applied
    await rig.rt.runner.drive(fresh.operation)  # the new owner settles the interrupted call
    assert (await rig.op(op)).state in (S.CREATE_UNKNOWN, S.RECONCILIATION, S.ACCEPTED)


@pytest.mark.sqlite_only
async def test_same_token_different_job_id_halts_for_a_human(rig: Harness) -> None:
    """A contract violation keeps both responses, stops automation and makes no more calls."""
    op = await rig.submit(
        {"account": "a", "_sim": {"drop_create_answer": True, "different_id_on_retry": True}}
    )
    await rig.run()
    op = await rig.op(op)
    jobs = {j.job_id for j in rig.jobs_for(op)}
    assert op.state is S.NEEDS_HUMAN and len(jobs) == 2
    assert set(op.conflicting_job_ids) == jobs and op.remote_job_id is None
    attempts = await rig.rt.ledger.store.attempts(op.operation_id)
    answered = {
        a.detail["body"]["job_id"]
        for a in attempts
        if isinstance(a.detail, dict)
        and isinstance(a.detail.get("body"), dict)
        and "job_id" in a.detail["body"]
    }
    listed = [a for a in attempts if a.kind is AttemptKind.RECONCILE]
    assert answered and listed  # the retry's answer and the lookup's answer are both kept
    calls = len(rig.sim.calls)
    rig.clock.advance(3600)
    await rig.run()
    assert len(rig.sim.calls) == calls


@pytest.mark.sqlite_only
@pytest.mark.parametrize("status", [429, 503])
async def test_retry_after_is_honoured(rig: Harness, status: int) -> None:
    """After a throttled status read, the next read is not before the time given."""
    throttle = {"status": status, "retry_after": 7, "times": 1}
    op = await rig.submit({"account": "a", "_sim": {"throttle_status": throttle}})
    await rig.run()
    assert (await rig.op(op)).state is S.SUCCEEDED
    reads = [
        a
        for a in await rig.rt.ledger.store.attempts(op.operation_id)
        if a.kind is AttemptKind.STATUS
    ]
    throttled = next(i for i, a in enumerate(reads) if a.http_status == status)
    assert reads[throttled].finished_at is not None
    wait = reads[throttled + 1].started_at - reads[throttled].finished_at
    assert wait >= timedelta(seconds=7)


@pytest.mark.sqlite_only
async def test_throttled_create_is_retried_after_retry_after(rig: Harness) -> None:
    """A 429 at create creates nothing and the retry waits for Retry-After."""
    throttle = {"status": 429, "retry_after": 5, "times": 1}
    op = await rig.submit({"account": "a", "_sim": {"throttle_create": throttle}})
    await rig.run()
    assert (await rig.op(op)).state is S.SUCCEEDED and len(rig.jobs_for(op)) == 1
    creates = [
        a
        for a in await rig.rt.ledger.store.attempts(op.operation_id)
        if a.kind is AttemptKind.CREATE
    ]
    assert creates[0].finished_at is not None
    assert creates[1].started_at - creates[0].finished_at >= timedelta(seconds=5)


@pytest.mark.sqlite_only
async def test_batch_with_failed_items_keeps_per_item_counts(rig: Harness) -> None:
    """498 succeeded, 2 failed: succeeded, with the failed items named."""
    op = await rig.submit({"account": "a", "items": 500, "_sim": {"failed_items": 2}})
    await rig.run()
    op = await rig.op(op)
    assert op.state is S.SUCCEEDED and op.result is not None
    assert op.result.items is not None
    assert (op.result.items.total, op.result.items.succeeded, op.result.items.failed) == (
        500,
        498,
        2,
    )
    assert len(op.result.items.failed_refs) == 2
    assert op.result.records == 500 and op.result.location is not None
    assert Path(op.result.location).stat().st_size == op.result.size


@pytest.mark.sqlite_only
@pytest.mark.parametrize(
    ("fault", "state", "problem"),
    [
        ({"bad_checksum": True}, S.RESULT_VALIDATION_FAILED, "checksum mismatch"),
        ({"wrong_content_type": True}, S.RESULT_VALIDATION_FAILED, "content type"),
        ({"record_count_mismatch": True}, S.RESULT_VALIDATION_FAILED, "provider stated"),
        ({"result_gone": 410}, S.RESULT_UNAVAILABLE, None),
        ({"result_gone": 404}, S.RESULT_UNAVAILABLE, None),
    ],
)
async def test_bad_results_end_in_the_right_state(
    rig: Harness, fault: dict[str, Any], state: State, problem: str | None
) -> None:
    """Checksum mismatch, wrong content type, wrong counts or a missing result never succeed."""
    op = await rig.submit({"account": "a", "_sim": fault})
    await rig.run()
    op = await rig.op(op)
    assert op.state is state
    if problem:
        assert op.result is not None and any(problem in p for p in op.result.problems)
    assert S.SUCCEEDED not in await rig.path(op)


@pytest.mark.sqlite_only
async def test_cancel_never_confirmed_escalates_with_a_complete_bundle(rig: Harness) -> None:
    """An ignored cancel ends in cancellation_unconfirmed after the cancel deadline."""
    op = await rig.submit(
        {"account": "a", "_sim": {"cancel": "ignore", "never_finish": True}},
        cancel_deadline=timedelta(minutes=5),
    )
    await rig.until(op, S.OBSERVING)
    await rig.rt.ledger.cancel(op.operation_id, actor="alice", reason="too expensive")
    await rig.run()
    op = await rig.op(op)
    assert op.state is S.CANCELLATION_UNCONFIRMED
    assert op.cancel_deadline is not None
    store = rig.rt.ledger.store
    attempts = await store.attempts(op.operation_id)
    bundle = escalation_bundle(op, await store.history(op.operation_id), attempts, rig.clock.now())
    assert bundle["remote_job_id"] == op.remote_job_id and bundle["trace_id"] == op.trace_id
    assert len(bundle["request_history"]) == len(attempts) >= 3
    assert len(bundle["provider_request_ids"]) == len(attempts)
    assert "may still be running" in bundle["summary"]
    assert len(rig.calls(op, "cancel")) == 1
    last_status = max(a.started_at for a in attempts if a.kind is AttemptKind.STATUS)
    assert last_status < op.cancel_deadline


@pytest.mark.sqlite_only
async def test_result_deadline_ends_polling(rig: Harness) -> None:
    """Past the result deadline: result_timed_out and no status read after it."""
    op = await rig.submit(
        {"account": "a", "_sim": {"never_finish": True}}, result_deadline=timedelta(minutes=10)
    )
    await rig.run()
    op = await rig.op(op)
    assert op.state is S.RESULT_TIMED_OUT and op.remote_job_id
    reads = [
        a
        for a in await rig.rt.ledger.store.attempts(op.operation_id)
        if a.kind is AttemptKind.STATUS
    ]
    assert reads and all(a.started_at < op.result_deadline for a in reads)
    count = len(rig.calls(op, "status"))
    rig.clock.advance(3600)
    await rig.run()
    assert len(rig.calls(op, "status")) == count


@pytest.mark.sqlite_only
async def test_definitive_rejection_at_create_is_not_retried(rig: Harness) -> None:
    """A 4xx at create fails the operation after exactly one call."""
    rejection = {"status": 400, "message": "unknown account"}
    op = await rig.submit({"account": "a", "_sim": {"reject_create": rejection}})
    await rig.run()
    op = await rig.op(op)
    assert op.state is S.FAILED and len(rig.calls(op, "create")) == 1
    assert rig.jobs_for(op) == []
    (attempt,) = await rig.rt.ledger.store.attempts(op.operation_id)
    assert attempt.http_status == 400 and "unknown account" in attempt.detail["body"]["message"]
