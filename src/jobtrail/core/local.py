"""Outcomes decided without a call: deadlines, recorded requests and human decisions."""

from __future__ import annotations

from jobtrail.core import outcomes as o
from jobtrail.core.allows import decision_refusal
from jobtrail.core.draft import Draft, cause_of
from jobtrail.core.model import Operation, evolve
from jobtrail.core.plan import watched_until
from jobtrail.core.states import OBSERVED_MOVES, Evidence, RemoteStatus, State
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


def on_deadline(draft: Draft, out: o.Outcome) -> None:
    assert isinstance(out, o.DeadlinePassed)
    to = _DEADLINE_MOVES.get((out.deadline, draft.op.state))
    if to is None:
        raise ActionRefused(f"the {out.deadline} deadline does not apply in {draft.op.state}")
    draft.move(to, _DEADLINE_EVIDENCE[out.deadline], f"deadline:{out.deadline}")
    draft.set(next_poll_at=None)


def on_cancel_requested(draft: Draft, out: o.Outcome) -> None:
    assert isinstance(out, o.CancelRequested)
    intent = out.intent
    draft.set(
        cancel_intent=intent,
        cancel_deadline=intent.requested_at + draft.op.cancel_timeout,
        poll_count=0,  # throttled cancels count from here (core/apply.py)
    )
    draft.move(
        State.CANCEL_REQUESTED,
        Evidence.CANCEL_INTENT,
        f"human_request:{intent.request_id}",
        actor=intent.actor,
    )
    draft.now_next()


def on_withdrawn(draft: Draft, out: o.Outcome) -> None:
    assert isinstance(out, o.Withdrawn)
    intent = out.intent
    draft.move(
        State.FAILED, Evidence.WITHDRAWN, f"human_request:{intent.request_id}", actor=intent.actor
    )
    draft.set(next_poll_at=None)


def on_no_reconciliation(draft: Draft, out: o.Outcome) -> None:
    draft.move(State.NEEDS_HUMAN, Evidence.NO_RECONCILIATION, "provider_capabilities")
    draft.set(next_poll_at=None)


def seen_job_ids(op: Operation) -> tuple[str, ...]:
    """The remote job ids a provider tied to this operation: adoptable on a person's word."""
    ids = (*op.conflicting_job_ids, op.candidate_job_id, op.remote_job_id)
    return tuple(dict.fromkeys(i for i in ids if i))


def on_decision(draft: Draft, out: o.Outcome) -> None:
    """A person's decision: refused where the state does not allow it (core/allows.py),
    else carried out by its own rule below."""
    assert isinstance(out, o.HumanDecision)
    refusal = decision_refusal(draft.op, out.decision, out.job_id)
    if refusal is not None:
        raise ActionRefused(refusal)
    _DECIDED[out.decision](draft, out, f"human_decision:{out.request_id}")


def _adopt(draft: Draft, out: o.HumanDecision, cause: str) -> None:
    op = draft.op
    if not out.job_id:
        raise ActionRefused("adopting needs the remote job id to adopt (--job-id)")
    if out.job_id not in seen_job_ids(op) and out.read is None:
        known = ", ".join(seen_job_ids(op)) or "none recorded"
        raise ActionRefused(
            f"{out.job_id!r} is not a job id this operation saw (seen: {known}), and "
            "no status read of it was made; nothing was changed"
        )
    draft.set(remote_job_id=out.job_id, candidate_job_id=None)
    if out.read is not None:
        draft.observe("status", out.read, out.read.ref)
    draft.move(State.ACCEPTED, Evidence.HUMAN_DECISION, cause, actor=out.actor)
    draft.set(poll_count=0, refused_reads=0, refused_since=None)
    if out.read is not None and out.read.remote_status.terminal:
        _adopted_ended(draft, out.read)
    draft.now_next()


def _adopted_ended(draft: Draft, read: o.Observed) -> None:
    """The adoption's status read saw the job ended: that read is the operation's terminal
    observation, followed at once as any status read's is (never `result_timed_out`, which
    is for a job not seen ended). A succeeded job adopted past the end of the watch gets the
    cancel timeout to have its result collected, as one read back after it is (apply.py)."""
    status = read.remote_status
    to, evidence = OBSERVED_MOVES[status]
    if read.partial_result and status is not RemoteStatus.SUCCEEDED:
        to = State.RESULT_COLLECTING  # what it finished is collected before it ends so
    if status is RemoteStatus.SUCCEEDED and read.location is not None:
        draft.set(inline_result=read.location)  # the answer is the result: nothing to fetch
    draft.move(to, evidence, cause_of("observation", read.ref))
    if to is State.RESULT_COLLECTING and draft.now >= watched_until(draft.op):
        draft.set(result_deadline=draft.now + draft.op.cancel_timeout)


def _mark_failed(draft: Draft, out: o.HumanDecision, cause: str) -> None:
    draft.move(State.FAILED, Evidence.HUMAN_DECISION, cause, actor=out.actor)
    draft.set(next_poll_at=None)


def _accept_as_is(draft: Draft, out: o.HumanDecision, cause: str) -> None:
    result = draft.op.result
    if result is None:
        raise ActionRefused(f"{draft.op.operation_id} holds no result to accept")
    # Valid on a person's word: what validation found stays in `problems`.
    note = f"accepted_as_is: by {out.actor} ({out.request_id}) despite its problems"
    draft.set(result=evolve(result, valid=True, checks=(*result.checks, note)))
    draft.move(State.SUCCEEDED, Evidence.HUMAN_DECISION, cause, actor=out.actor)
    draft.set(next_poll_at=None)


def _collect_again(draft: Draft, out: o.HumanDecision, cause: str) -> None:
    if out.new_deadline is not None and out.new_deadline > draft.op.result_deadline:
        draft.set(result_deadline=out.new_deadline)
    draft.move(State.RESULT_COLLECTING, Evidence.HUMAN_DECISION, cause, actor=out.actor)
    draft.now_next()


def _extend(draft: Draft, out: o.HumanDecision, cause: str) -> None:
    if out.new_deadline is None or out.new_deadline <= draft.now:
        raise ActionRefused("the new result deadline must be in the future")
    draft.set(result_deadline=out.new_deadline, poll_count=0)
    draft.move(State.OBSERVING, Evidence.HUMAN_DECISION, cause, actor=out.actor)
    draft.now_next()


def _extend_cancel(draft: Draft, out: o.HumanDecision, cause: str) -> None:
    if out.new_deadline is None or out.new_deadline <= draft.now:
        raise ActionRefused("the new cancel deadline must be in the future")
    draft.set(cancel_deadline=out.new_deadline, poll_count=0)
    draft.move(State.CANCELLING, Evidence.HUMAN_DECISION, cause, actor=out.actor)
    draft.now_next()


_DECIDED = {
    o.Decision.ADOPT: _adopt,
    o.Decision.MARK_FAILED: _mark_failed,
    o.Decision.RETRY_AS_NEW: _mark_failed,
    o.Decision.ACCEPT_AS_IS: _accept_as_is,
    o.Decision.COLLECT_AGAIN: _collect_again,
    o.Decision.EXTEND: _extend,
    o.Decision.EXTEND_CANCEL: _extend_cancel,
}
