"""Outcomes decided without a call: deadlines, recorded requests and human decisions."""

from __future__ import annotations

from jobtrail.core import outcomes as o
from jobtrail.core.model import Operation
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


def seen_job_ids(op: Operation) -> tuple[str, ...]:
    """The remote job ids a provider tied to this operation: adoptable on a person's word."""
    ids = (*op.conflicting_job_ids, op.candidate_job_id, op.remote_job_id)
    return tuple(dict.fromkeys(i for i in ids if i))


def on_decision(step: Step, out: o.Outcome) -> None:
    assert isinstance(out, o.HumanDecision)
    op, cause = step.op, f"human_decision:{out.request_id}"
    match (out.decision, op.state):
        case (o.Decision.ADOPT, State.NEEDS_HUMAN):
            if not out.job_id:
                raise ActionRefused("adopting needs the remote job id to adopt")
            if out.job_id not in seen_job_ids(op) and out.read is None:
                known = ", ".join(op.conflicting_job_ids) or "none recorded"
                raise ActionRefused(
                    f"{out.job_id!r} is not a job id this operation saw (seen: {known}), and "
                    "no status read of it was made; nothing was changed"
                )
            step.set(remote_job_id=out.job_id, candidate_job_id=None)
            if out.read is not None:
                step.observe("status", out.read, out.read.ref)
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
        case (o.Decision.EXTEND, State.CANCELLATION_UNCONFIRMED):
            raise ActionRefused(
                f"{op.operation_id} is cancellation_unconfirmed: it waits on the cancel "
                "deadline, not the result deadline; extend that one (--cancel-deadline)"
            )
        case (o.Decision.EXTEND_CANCEL, State.RESULT_TIMED_OUT):
            raise ActionRefused(
                f"{op.operation_id} is result_timed_out: it waits on the result deadline, "
                "not the cancel deadline; extend that one (--result-deadline)"
            )
        case _:
            raise ActionRefused(f"the decision '{out.decision}' does not apply in state {op.state}")
