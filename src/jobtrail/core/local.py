"""Outcomes decided without a call: deadlines, recorded requests and human decisions."""

from __future__ import annotations

from jobtrail.core import outcomes as o
from jobtrail.core.states import Evidence, State
from jobtrail.core.step import Step
from jobtrail.errors import ActionRefused

_DEADLINE_MOVES = {
    (o.Deadline.CREATE, State.CREATE_PENDING): State.FAILED,
    (o.Deadline.CREATE, State.CREATE_UNKNOWN): State.NEEDS_HUMAN,
    (o.Deadline.CREATE, State.RECONCILIATION): State.NEEDS_HUMAN,
    (o.Deadline.RESULT, State.ACCEPTED): State.RESULT_TIMED_OUT,
    (o.Deadline.RESULT, State.OBSERVING): State.RESULT_TIMED_OUT,
    (o.Deadline.RESULT, State.RESULT_COLLECTING): State.RESULT_UNAVAILABLE,
    (o.Deadline.CANCEL, State.CANCEL_REQUESTED): State.CANCELLATION_UNCONFIRMED,
    (o.Deadline.CANCEL, State.CANCELLING): State.CANCELLATION_UNCONFIRMED,
}
_DEADLINE_EVIDENCE = {
    o.Deadline.CREATE: Evidence.CREATE_DEADLINE_PASSED,
    o.Deadline.RESULT: Evidence.RESULT_DEADLINE_PASSED,
    o.Deadline.CANCEL: Evidence.CANCEL_DEADLINE_PASSED,
}


def on_deadline(step: Step, out: o.Outcome) -> None:
    assert isinstance(out, o.DeadlinePassed)
    to = _DEADLINE_MOVES.get((out.deadline, step.op.state))
    if to is None:
        raise ActionRefused(f"the {out.deadline} deadline does not apply in {step.op.state}")
    step.move(to, _DEADLINE_EVIDENCE[out.deadline], f"deadline:{out.deadline}")
    step.set(next_poll_at=None)


def on_cancel_requested(step: Step, out: o.Outcome) -> None:
    assert isinstance(out, o.CancelRequested)
    intent = out.intent
    step.set(
        cancel_intent=intent,
        cancel_deadline=intent.requested_at + step.op.cancel_timeout,
    )
    step.move(
        State.CANCEL_REQUESTED,
        Evidence.CANCEL_INTENT,
        f"human_request:{intent.request_id}",
        actor=intent.actor,
    )
    step.now_next()


def on_withdrawn(step: Step, out: o.Outcome) -> None:
    assert isinstance(out, o.Withdrawn)
    intent = out.intent
    step.move(
        State.FAILED, Evidence.WITHDRAWN, f"human_request:{intent.request_id}", actor=intent.actor
    )
    step.set(next_poll_at=None)


def on_no_reconciliation(step: Step, out: o.Outcome) -> None:
    step.move(State.NEEDS_HUMAN, Evidence.NO_RECONCILIATION, "provider_capabilities")
    step.set(next_poll_at=None)


def on_decision(step: Step, out: o.Outcome) -> None:
    assert isinstance(out, o.HumanDecision)
    op, cause = step.op, f"human_decision:{out.request_id}"
    match (out.decision, op.state):
        case (o.Decision.ADOPT, State.NEEDS_HUMAN):
            if not out.job_id:
                raise ActionRefused("adopting needs the remote job id to adopt")
            step.set(remote_job_id=out.job_id, candidate_job_id=None)
            step.move(State.ACCEPTED, Evidence.HUMAN_DECISION, cause, actor=out.actor)
            step.set(poll_count=0, refused_reads=0, refused_since=None)
            step.now_next()
        case (o.Decision.MARK_FAILED | o.Decision.RETRY_AS_NEW, State.NEEDS_HUMAN):
            step.move(State.FAILED, Evidence.HUMAN_DECISION, cause, actor=out.actor)
            step.set(next_poll_at=None)
        case (o.Decision.EXTEND, State.RESULT_TIMED_OUT):
            if out.new_deadline is None or out.new_deadline <= step.now:
                raise ActionRefused("the new result deadline must be in the future")
            step.set(result_deadline=out.new_deadline, poll_count=0)
            step.move(State.OBSERVING, Evidence.HUMAN_DECISION, cause, actor=out.actor)
            step.now_next()
        case (o.Decision.EXTEND_CANCEL, State.CANCELLATION_UNCONFIRMED):
            if out.new_deadline is None or out.new_deadline <= step.now:
                raise ActionRefused("the new cancel deadline must be in the future")
            step.set(cancel_deadline=out.new_deadline, poll_count=0)
            step.move(State.CANCELLING, Evidence.HUMAN_DECISION, cause, actor=out.actor)
            step.now_next()
        case _:
            raise ActionRefused(f"the decision '{out.decision}' does not apply in state {op.state}")
