"""plan() and apply(): the article's reference loop, one step at a time."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from jobtrail.core import outcomes as o
from jobtrail.core.model import AttemptKind, CancelIntent, ResultSummary
from jobtrail.core.plan import Call, Halt, Nothing, Settle, Wait, plan
from jobtrail.core.states import Evidence, RemoteStatus, State
from jobtrail.errors import ActionRefused

from factories import FULL, T0, make_op, step

RUNNING = o.Observed(remote_state="running", remote_status=RemoteStatus.RUNNING, ref="at_2")
DONE = o.Observed(remote_state="succeeded", remote_status=RemoteStatus.SUCCEEDED, ref="at_3")
ACCEPTED = o.Accepted(
    job_id="job_7ad2", remote_state="queued", remote_status=RemoteStatus.RUNNING, ref="at_1"
)
INTENT = CancelIntent(
    actor="alice",
    reason="stop",
    expected_effect="no charge",
    requested_at=T0,
    request_id="req_91af",
)


def test_a_new_operation_plans_to_send_create_with_its_token() -> None:
    """create_pending with no attempts: send create."""
    assert plan(make_op(), T0) == Call(kind=AttemptKind.CREATE, retry=False)


def test_happy_path_reaches_succeeded_only_after_validation() -> None:
    """accepted -> observing -> result_collecting -> succeeded, each with its evidence."""
    applied = step(make_op(), ACCEPTED)
    op = applied.operation
    assert op.state is State.ACCEPTED and op.remote_job_id == "job_7ad2"
    assert op.next_poll_at is not None and op.next_poll_at > T0
    op = step(op, RUNNING).operation
    assert op.state is State.OBSERVING
    op = step(op, DONE).operation
    assert op.state is State.RESULT_COLLECTING
    assert plan(op, op.next_poll_at or T0) == Call(kind=AttemptKind.RESULT)
    summary = ResultSummary(valid=True, sha256="ab", size=3)
    final = step(op, o.ResultChecked(summary=summary, ref="at_4"))
    assert final.operation.state is State.SUCCEEDED
    assert final.transitions[-1].evidence is Evidence.RESULT_VALIDATED
    assert plan(final.operation, T0) == Nothing(why=Halt.ENDED)


def test_progress_100_does_not_finish_the_operation() -> None:
    """A running state with full progress stays observing and schedules another poll."""
    op = step(make_op(), ACCEPTED).operation
    full = replace(RUNNING, progress={"completed": 500, "total": 500})
    applied = step(op, full)
    assert applied.operation.state is State.OBSERVING
    assert applied.operation.progress == {"completed": 500, "total": 500}
    assert isinstance(plan(applied.operation, applied.operation.updated_at or T0), Wait)


def test_ambiguous_create_moves_to_create_unknown_and_retries_same_token() -> None:
    """A timeout after sending is not a rejection: create_unknown, then a same-token retry."""
    op = step(make_op(), o.Ambiguous(reason="timeout", ref="at_1")).operation
    assert op.state is State.CREATE_UNKNOWN
    action = plan(op, op.next_poll_at or T0)
    assert action == Call(kind=AttemptKind.CREATE, retry=True)
    assert op.idempotency_token == make_op().idempotency_token


def test_same_token_answer_is_checked_against_the_listing() -> None:
    """A retry's job id is confirmed by lookup; a different listed id stops for a human."""
    unknown = step(make_op(), o.Ambiguous(reason="reset", ref="at_1")).operation
    checking = step(unknown, replace(ACCEPTED, job_id="job_B")).operation
    assert checking.state is State.RECONCILIATION and checking.candidate_job_id == "job_B"
    assert plan(checking, T0 + timedelta(minutes=1)) == Call(kind=AttemptKind.RECONCILE)
    confirmed = step(checking, o.Found(job_ids=("job_B",), ref="at_3")).operation
    assert confirmed.state is State.ACCEPTED and confirmed.remote_job_id == "job_B"
    violated = step(checking, o.Found(job_ids=("job_A",), ref="at_3"))
    assert violated.operation.state is State.NEEDS_HUMAN
    assert violated.operation.conflicting_job_ids == ("job_B", "job_A")
    assert violated.transitions[-1].evidence is Evidence.CONTRACT_VIOLATION
    assert plan(violated.operation, T0) == Nothing(why=Halt.NEEDS_HUMAN)


def test_lookup_proving_absence_returns_to_create_pending_with_the_same_token() -> None:
    """No job under our reference: create again, with the stored token."""
    caps = replace(FULL, same_token_retry=False)
    unknown = step(make_op(capabilities=caps), o.Ambiguous(reason="reset", ref="at_1")).operation
    assert plan(unknown, unknown.next_poll_at or T0) == Call(kind=AttemptKind.RECONCILE)
    late = T0 + timedelta(seconds=90)  # past the visibility window (FULL: 60 s)
    absent = step(unknown, o.Found(job_ids=(), ref="at_2"), at=late).operation
    assert absent.state is State.CREATE_PENDING
    assert plan(absent, late) == Call(kind=AttemptKind.CREATE, retry=True)


def test_no_reconciliation_means_a_human_decides() -> None:
    """Without any reconciliation means, an unknown create is not retried blindly."""
    caps = replace(FULL, same_token_retry=False, list_by_reference=False)
    unknown = step(make_op(capabilities=caps), o.Ambiguous(reason="reset")).operation
    action = plan(unknown, unknown.next_poll_at or T0)
    assert action == Settle(outcome=o.NoReconciliation())
    assert step(unknown, action.outcome).operation.state is State.NEEDS_HUMAN


def test_create_deadline_without_proof_needs_a_human() -> None:
    """Past the create deadline in create_unknown: one lookup (never a resend), and when it
    finds nothing, needs_human, never a guess."""
    caps = replace(FULL, absent_after=None)  # a miss never proves absence
    unknown = step(make_op(capabilities=caps), o.Ambiguous(reason="timeout")).operation
    late = T0 + timedelta(minutes=3)
    assert plan(unknown, late) == Call(kind=AttemptKind.RECONCILE)
    looked = step(unknown, o.Found(job_ids=(), ref="at_2"), at=late).operation
    assert looked.state is State.RECONCILIATION
    action = plan(looked, late)
    assert action == Settle(outcome=o.DeadlinePassed(deadline=o.Deadline.CREATE))
    assert step(looked, action.outcome, at=late).operation.state is State.NEEDS_HUMAN


def test_definitive_rejection_fails_without_retry() -> None:
    """A 4xx at create: failed, and nothing more is planned."""
    op = step(make_op(), o.Rejected(reason="HTTP 400", http_status=400)).operation
    assert op.state is State.FAILED and op.next_poll_at is None
    assert isinstance(plan(op, T0), Nothing)


def test_retry_after_sets_the_next_poll() -> None:
    """A throttled status read is retried at the time the provider gave, not earlier."""
    op = step(make_op(), ACCEPTED).operation
    at = op.next_poll_at or T0
    throttled = step(op, o.Throttled(reason="503", retry_after="7", http_status=503), at=at)
    assert throttled.operation.next_poll_at == at + timedelta(seconds=7)
    assert throttled.operation.state is State.ACCEPTED


def test_result_deadline_is_a_state_not_forgetting() -> None:
    """Past the result deadline: result_timed_out, remote job id kept, no more polls."""
    op = step(step(make_op(), ACCEPTED).operation, RUNNING).operation
    late = T0 + timedelta(hours=2)
    action = plan(op, late)
    assert action == Settle(outcome=o.DeadlinePassed(deadline=o.Deadline.RESULT))
    timed_out = step(op, action.outcome, at=late).operation
    assert timed_out.state is State.RESULT_TIMED_OUT
    assert timed_out.remote_job_id == "job_7ad2" and timed_out.next_poll_at is None


def test_cancel_is_sent_once_and_cancelled_needs_the_remote_word() -> None:
    """cancel_requested -> send cancel -> cancelling -> cancelled on a cancelled observation."""
    op = step(step(make_op(), ACCEPTED).operation, RUNNING).operation
    requested = step(op, o.CancelRequested(intent=INTENT), actor="alice")
    assert requested.operation.state is State.CANCEL_REQUESTED
    assert requested.transitions[0].actor == "alice"
    assert requested.transitions[0].cause == "human_request:req_91af"
    op = requested.operation
    assert plan(op, op.next_poll_at or T0) == Call(kind=AttemptKind.CANCEL)
    op = step(op, o.CancelAcknowledged(http_status=202)).operation
    assert op.state is State.CANCELLING and op.cancel_sent
    assert plan(op, op.next_poll_at or T0) == Call(kind=AttemptKind.STATUS)
    gone = o.Observed(remote_state="cancelled", remote_status=RemoteStatus.CANCELLED)
    assert step(op, gone).operation.state is State.CANCELLED


def test_completion_racing_the_cancel_is_reported_as_succeeded() -> None:
    """A job that finished while the cancel was in flight ends succeeded, not cancelled."""
    op = step(step(make_op(), ACCEPTED).operation, o.CancelRequested(intent=INTENT)).operation
    op = step(op, o.CancelAcknowledged()).operation
    assert step(op, DONE).operation.state is State.RESULT_COLLECTING


def test_an_ambiguous_cancel_is_never_sent_again() -> None:
    """A cancel that timed out may have been heard: observe instead of resending."""
    op = step(step(make_op(), ACCEPTED).operation, o.CancelRequested(intent=INTENT)).operation
    op = step(op, o.Ambiguous(reason="timeout")).operation
    assert op.cancel_sent and op.state is State.CANCEL_REQUESTED
    assert plan(op, op.next_poll_at or T0) == Call(kind=AttemptKind.STATUS)


def test_cancel_deadline_escalates_to_cancellation_unconfirmed() -> None:
    """No terminal state by the cancel deadline: cancellation_unconfirmed."""
    op = step(step(make_op(), ACCEPTED).operation, o.CancelRequested(intent=INTENT)).operation
    late = T0 + timedelta(minutes=11)
    action = plan(op, late)
    assert action == Settle(outcome=o.DeadlinePassed(deadline=o.Deadline.CANCEL))
    assert step(op, action.outcome, at=late).operation.state is State.CANCELLATION_UNCONFIRMED


def test_cancel_before_any_create_withdraws_the_operation() -> None:
    """A cancel recorded before anything was sent: nothing is sent, the operation fails."""
    op = make_op(cancel_intent=INTENT)
    action = plan(op, T0)
    assert action == Settle(outcome=o.Withdrawn(intent=INTENT))
    applied = step(op, action.outcome)
    assert applied.operation.state is State.FAILED
    assert applied.transitions[0].evidence is Evidence.WITHDRAWN


def test_cancel_before_the_job_id_is_carried_out_once_it_is_known() -> None:
    """An intent recorded during create_unknown becomes cancel_requested on acceptance."""
    unknown = step(
        make_op(capabilities=replace(FULL, list_by_reference=False)), o.Ambiguous(reason="timeout")
    ).operation
    applied = step(replace(unknown, cancel_intent=INTENT), ACCEPTED)
    assert [t.to_state for t in applied.transitions] == [State.ACCEPTED, State.CANCEL_REQUESTED]


def test_interrupted_create_is_treated_as_possibly_sent() -> None:
    """A crash between intent and outcome: create_unknown, retried with the same token."""
    op = make_op(inflight_attempt="at_1")
    action = plan(op, T0)
    assert action == Settle(outcome=o.Interrupted(attempt_id="at_1"))
    resumed = step(op, action.outcome).operation
    assert resumed.state is State.CREATE_UNKNOWN and resumed.inflight_attempt is None
    assert plan(resumed, T0) == Call(kind=AttemptKind.CREATE, retry=True)


def test_human_decisions_are_checked_against_the_state() -> None:
    """Adopting a job id is for needs_human only; extending is for timed-out operations."""
    decision = o.HumanDecision(decision=o.Decision.ADOPT, actor="bob", reason="r", job_id="job_A")
    with pytest.raises(ActionRefused):
        step(make_op(), decision)
    stuck = make_op(state=State.NEEDS_HUMAN, conflicting_job_ids=("job_A", "job_B"))
    adopted = step(stuck, decision)
    assert adopted.operation.state is State.ACCEPTED and adopted.operation.remote_job_id == "job_A"
    assert adopted.transitions[0].actor == "bob"


def test_sync_result_goes_straight_to_collection() -> None:
    """A synchronous result is recorded under the same operation, then validated."""
    sync = o.SyncResult(
        job_id=None, content=b"{}", content_type="application/json", location="/r/ab"
    )
    op = step(make_op(), sync).operation
    assert op.state is State.RESULT_COLLECTING and op.inline_result == "/r/ab"


def test_evolve_is_replace_without_the_cost() -> None:
    """evolve gives what dataclasses.replace gives, and refuses unknown fields."""
    from dataclasses import replace as dc_replace

    from jobtrail.core.model import evolve

    op = make_op()
    assert evolve(op, poll_count=3, state=State.ACCEPTED) == dc_replace(
        op, poll_count=3, state=State.ACCEPTED
    )
    assert op.poll_count == 0  # the original is untouched
    with pytest.raises(TypeError, match="no field 'polls'"):
        evolve(op, polls=1)
