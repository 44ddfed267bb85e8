"""`apply(operation, outcome, now)`: turn one outcome into transitions and an updated record.

Facts that change no state (a running observation, a throttled call) only update the record
and the schedule; every state change goes through `Draft.move` (see draft.py). Outcomes that
need no call are handled in local.py.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from jobtrail.core import evidence, local, refused
from jobtrail.core import outcomes as o
from jobtrail.core.draft import Applied, Draft, Schedule, cause_of
from jobtrail.core.model import AttemptKind, Operation, evolve
from jobtrail.core.plan import Call, absence_provable_at, call_for, lookup_owed, watched_until
from jobtrail.core.states import ENDS_AUTOMATION, OBSERVED_MOVES, Evidence, RemoteStatus, State
from jobtrail.errors import ActionRefused

__all__ = ["Applied", "Schedule", "apply", "misdirected"]


def apply(
    op: Operation, outcome: o.Outcome, now: datetime, *, actor: str, schedule: Schedule
) -> Applied:
    """The transitions and updated record that `outcome` justifies for `op` at `now`. A
    call's outcome is judged first (core/evidence.py): an end no answer stated is no end."""
    outcome = judged(outcome, op)
    allowed = _WHERE.get(type(outcome))
    if allowed is not None and op.state not in allowed:
        raise ActionRefused(
            f"a {type(outcome).__name__} outcome cannot apply to an operation in {op.state}"
        )
    draft = Draft(op, now, actor, schedule)
    if _answers_create(op, outcome, now):
        # The create may have reached the provider: a lookup miss proves nothing until the
        # provider's visibility window has passed since now (see _on_found).
        draft.set(create_sent_at=now)
    handler = _HANDLERS.get(type(outcome))
    if handler is None:  # pragma: no cover - every outcome type has a handler
        raise TypeError(f"no handler for {type(outcome).__name__}")
    handler(draft, outcome)
    return draft.result()


def misdirected(outcome: o.Outcome, op: Operation, kind: AttemptKind) -> bool:
    """Whether `outcome` is a provider's answer that cannot answer the `kind` call `op`'s
    state asks for (an Observed or a Found to a create, an Accepted to a status read): not
    evidence of anything, so the call's outcome is unknown. An outcome arriving for a call
    the state no longer asks for (a copy, late) is not this: `apply` refuses it."""
    call = call_for(op)
    if not isinstance(call, Call) or call.kind is not kind:
        return False
    allowed = _WHERE.get(type(outcome))
    return allowed is not None and op.state not in allowed


def judged(outcome: o.Outcome, op: Operation) -> o.Outcome:
    """`outcome` as the evidence it carries allows (core/evidence.py): what the ledger
    records as the call's outcome, and what `apply` applies."""
    if isinstance(outcome, o.ResultChecked):
        summary = evidence.checked_result(outcome.summary, op.capabilities)
        return outcome if summary is outcome.summary else evolve(outcome, summary=summary)
    if isinstance(outcome, o.Observed | o.Accepted | o.SyncResult):
        return evidence.judge(outcome)
    return outcome


def _answers_create(op: Operation, outcome: o.Outcome, now: datetime) -> bool:
    """Whether `outcome` answers a create call (the call the plan makes in `op`'s state), or
    settles one interrupted by a crash."""
    if op.state not in _CREATING:
        return False
    if isinstance(outcome, o.Interrupted):
        return True
    call = call_for(op, now)
    return (
        isinstance(call, Call)
        and call.kind is AttemptKind.CREATE
        and isinstance(outcome, o.CallOutcome)
    )


def _follow_observation(
    draft: Draft, status: RemoteStatus, cause: str, partial_result: bool = False
) -> None:
    """Move on what the remote state says; a non-terminal state moves nothing but
    accepted -> observing. A failed or cancelled job with a partial result has it collected
    first (see _ended_after_result)."""
    if status in OBSERVED_MOVES:
        to, evidence = OBSERVED_MOVES[status]
        draft.move(State.RESULT_COLLECTING if partial_result else to, evidence, cause)
    elif draft.op.state is State.ACCEPTED:
        draft.move(State.OBSERVING, Evidence.OBSERVED_RUNNING, cause)


def _on_accepted(draft: Draft, out: o.Outcome) -> None:
    assert isinstance(out, o.Accepted)
    op = draft.op
    cause = cause_of("create_response", out.ref)
    draft.set(inflight_attempt=None, create_attempts=op.create_attempts + 1)
    if op.state is State.CREATE_UNKNOWN and op.capabilities.lookup:
        # Our first answer was lost; before trusting this one, check it against what the
        # provider lists under our reference (a different id there is a contract violation).
        draft.set(candidate_job_id=out.job_id, status_url=out.status_url, status_via=out.status_via)
        draft.move(State.RECONCILIATION, Evidence.CREATE_ACCEPTED, cause)
        draft.now_next()
        return
    draft.set(remote_job_id=out.job_id, status_url=out.status_url, status_via=out.status_via)
    draft.move(State.ACCEPTED, Evidence.CREATE_ACCEPTED, cause)
    _after_accept(draft, out, cause)


def _after_accept(draft: Draft, out: o.Accepted | None, cause: str) -> None:
    if out is not None:
        draft.observe("create", out, out.ref)
        if out.remote_status.terminal:
            _follow_observation(draft, out.remote_status, cause)
            if draft.op.state is State.RESULT_COLLECTING:
                draft.now_next()
            return
    if draft.op.cancel_intent is not None:
        local.on_cancel_requested(draft, o.CancelRequested(intent=draft.op.cancel_intent))
        return
    draft.set(poll_count=0)
    draft.schedule_poll(out.retry_after if out else None)


def _on_sync_result(draft: Draft, out: o.Outcome) -> None:
    assert isinstance(out, o.SyncResult)
    draft.set(
        inflight_attempt=None,
        create_attempts=draft.op.create_attempts + 1,
        remote_job_id=out.job_id,
        remote_status=RemoteStatus.SUCCEEDED,
        inline_result=out.location,
    )
    draft.move(State.RESULT_COLLECTING, Evidence.SYNC_RESULT, cause_of("create_response", out.ref))
    draft.now_next()


def _on_rejected(draft: Draft, out: o.Outcome) -> None:
    assert isinstance(out, o.Rejected)
    draft.set(inflight_attempt=None)
    if draft.op.state is State.CREATE_PENDING:
        # Final: in create_pending no earlier attempt can have made a job (none was sent,
        # each was throttled, or the declared lookup proved none exists).
        draft.set(create_attempts=draft.op.create_attempts + 1)
        draft.move(State.FAILED, Evidence.CREATE_REJECTED, cause_of("create_response", out.ref))
        draft.set(next_poll_at=None)
    elif draft.op.state is State.CREATE_UNKNOWN:
        _unproven(draft, out)
    elif draft.op.state is State.RECONCILIATION:
        # A refused lookup proves nothing either: ask again, backing off like any create-side
        # retry, until the create deadline hands the question to a person.
        draft.set(create_attempts=draft.op.create_attempts + 1)
        draft.schedule_retry(None, draft.op.create_attempts)
    elif draft.op.state is State.CANCEL_REQUESTED and not draft.op.cancel_sent:
        # The provider refused the cancel (for example: already finished). It was sent once;
        # keep observing to learn the real terminal state.
        draft.set(cancel_sent=True)
        draft.now_next()
    elif draft.op.state in _WATCHING:
        refused.on_refused_read(draft, out)
    else:
        draft.schedule_poll(None)  # any other refused call backs off too (poll count rises)


def _unproven(draft: Draft, out: o.Rejected) -> None:
    """A refusal after a create may have reached the provider ("already exists", or a 400
    or 422 to the retry) says nothing about the first attempt: only the declared lookup
    can, and without one a person decides. Never `failed`."""
    draft.set(create_attempts=draft.op.create_attempts + 1)
    cause = cause_of("rejection", out.ref)  # the attempt says which call was refused
    if draft.op.capabilities.lookup:
        draft.move(State.RECONCILIATION, Evidence.CREATE_UNPROVEN, cause)
        draft.now_next()
    else:
        draft.move(State.NEEDS_HUMAN, Evidence.CREATE_UNPROVEN, cause)
        draft.set(next_poll_at=None)


def _on_ambiguous(draft: Draft, out: o.Outcome) -> None:
    assert isinstance(out, o.Ambiguous | o.Throttled)
    op = draft.op
    draft.set(inflight_attempt=None)
    sent = isinstance(out, o.Ambiguous)
    throttled = isinstance(out, o.Throttled)  # its Retry-After is a floor: back off anyway
    retry_after = out.retry_after if isinstance(out, o.Throttled) else None
    if op.state is State.CREATE_PENDING:
        draft.set(create_attempts=op.create_attempts + 1)
        # A 409 "in flight" to a create says a request under our token reached the provider:
        # a job may exist, so a later rejection could no longer prove that none does.
        if sent or out.http_status == 409:
            draft.move(State.CREATE_UNKNOWN, Evidence.CREATE_AMBIGUOUS, cause_of("create", out.ref))
        draft.schedule_retry(retry_after, op.create_attempts, throttled=throttled)
    elif lookup_owed(op, draft.now):
        # The one lookup owed past the create deadline went unanswered: a person decides.
        draft.move(State.NEEDS_HUMAN, Evidence.CREATE_DEADLINE_PASSED, "deadline:create")
        draft.set(next_poll_at=None)
    elif op.state in (State.CREATE_UNKNOWN, State.RECONCILIATION):
        draft.set(create_attempts=op.create_attempts + 1)
        draft.schedule_retry(retry_after, op.create_attempts, throttled=throttled)
    elif op.state is State.CANCEL_REQUESTED and not op.cancel_sent:
        # An ambiguous cancel may have been heard: never send it again, observe instead.
        draft.set(cancel_sent=sent)
        if sent:
            draft.schedule_poll(None)
        else:
            # throttled cancels in a row back off like polls (the count restarts at the ack)
            draft.schedule_retry(retry_after, op.poll_count, throttled=True)
            draft.set(poll_count=op.poll_count + 1)
    elif isinstance(out, o.Ambiguous) and out.unreadable and op.state in _WATCHING:
        # The provider answered, but with nothing readable as a state: counted like a
        # refusal, so that a provider that keeps doing it stops for a person.
        refused.on_refused_read(draft, out)
    else:
        draft.schedule_poll(retry_after, throttled=throttled)


def _on_observed(draft: Draft, out: o.Outcome) -> None:
    assert isinstance(out, o.Observed)
    draft.set(inflight_attempt=None)
    refused.reset(draft)
    if out.status_url:
        draft.set(status_url=out.status_url, status_via=out.status_via)
    if out.location is not None and out.remote_status is RemoteStatus.SUCCEEDED:
        draft.set(inline_result=out.location)  # the answer is the result: nothing to fetch
    draft.observe("status", out, out.ref)
    cause = cause_of("observation", out.ref)
    _follow_observation(draft, out.remote_status, cause, out.partial_result)
    state = draft.op.state
    if state is State.RESULT_COLLECTING:
        _time_to_collect(draft)
        draft.now_next()
    elif state.ends_automation:
        draft.set(next_poll_at=None)
    elif state is State.CANCEL_REQUESTED and not draft.op.cancel_sent:
        draft.now_next()
    else:
        draft.schedule_poll(out.retry_after)


def _time_to_collect(draft: Draft) -> None:
    """A job the provider stopped by itself at its own deadline, read only once jobtrail was
    back past the end of the watch (plan.watched_until): its result (what it finished) gets
    the cancel timeout to be collected, instead of a result deadline already gone."""
    op = draft.op
    if op.request.remote_deadline is None or draft.now < watched_until(op):
        return
    draft.set(result_deadline=draft.now + op.cancel_timeout)


def _on_found(draft: Draft, out: o.Outcome) -> None:
    assert isinstance(out, o.Found)
    draft.set(inflight_attempt=None)
    cause = cause_of("reconcile", out.ref)
    if draft.op.state is State.CREATE_UNKNOWN:
        draft.move(State.RECONCILIATION, Evidence.RECONCILE_LOOKUP, cause)
    candidate, found = draft.op.candidate_job_id, tuple(dict.fromkeys(out.job_ids))
    expected = (candidate,) if candidate else None
    if len(found) > 1 or (candidate and found and found != expected):
        ids = tuple(dict.fromkeys((*((candidate,) if candidate else ()), *found)))
        draft.set(conflicting_job_ids=ids, next_poll_at=None)
        draft.move(State.NEEDS_HUMAN, Evidence.CONTRACT_VIOLATION, cause)
    elif len(found) == 1:
        draft.set(remote_job_id=found[0], candidate_job_id=None)
        draft.move(State.ACCEPTED, Evidence.RECONCILED_FOUND, cause)
        _after_accept(draft, None, cause)
    elif candidate:
        # The provider named a job for our token but does not list it (yet): inconclusive.
        draft.schedule_retry(None, draft.op.create_attempts)
    elif out.capped:
        # A scan that stopped at its cap saw only part of the listing, and every job made
        # since pushes ours further down: looking again cannot settle it. A person decides.
        draft.set(next_poll_at=None)
        draft.move(State.NEEDS_HUMAN, Evidence.LOOKUP_CAPPED, cause)
    else:
        proven_at = draft.now if out.ruled_out else absence_provable_at(draft.op)
        asked_at = out.asked_at or draft.now  # the listing as it was when it was read
        if proven_at is not None and (out.ruled_out or asked_at >= proven_at):
            draft.move(State.CREATE_PENDING, Evidence.ABSENCE_PROVEN, cause)
            draft.now_next()
            return
        # Our create may still land, or the provider may not list it yet: look again on the
        # ordinary backoff (a job listed late is adopted as soon as it shows), and at the
        # window's end at the latest, when a miss proves absence; at the create deadline a
        # person decides. Never a resend on a miss that proves nothing.
        draft.set(create_attempts=draft.op.create_attempts + 1)
        draft.schedule_retry(None, draft.op.create_attempts)
        if proven_at is not None and draft.op.next_poll_at is not None:
            draft.set(next_poll_at=min(draft.op.next_poll_at, proven_at))


def _on_cancel_ack(draft: Draft, out: o.Outcome) -> None:
    assert isinstance(out, o.CancelAcknowledged)
    draft.set(inflight_attempt=None, cancel_sent=True, poll_count=0)
    draft.move(State.CANCELLING, Evidence.CANCEL_ACKNOWLEDGED, cause_of("cancel_response", out.ref))
    draft.schedule_poll(None)


def _on_result_checked(draft: Draft, out: o.Outcome) -> None:
    assert isinstance(out, o.ResultChecked)
    cause = cause_of("result", out.ref)
    summary = out.summary
    if draft.op.remote_status in (RemoteStatus.FAILED, RemoteStatus.CANCELLED):
        summary = evolve(summary, partial=True)  # what the job finished before it ended
    draft.set(inflight_attempt=None, result=summary, next_poll_at=None)
    if _ended_after_result(draft, cause):
        return
    if out.summary.valid:
        draft.move(State.SUCCEEDED, Evidence.RESULT_VALIDATED, cause)
    else:
        draft.move(State.RESULT_VALIDATION_FAILED, Evidence.RESULT_INVALID, cause)


def _on_result_missing(draft: Draft, out: o.Outcome) -> None:
    assert isinstance(out, o.ResultMissing)
    draft.set(inflight_attempt=None, next_poll_at=None)
    if _ended_after_result(draft, cause_of("result", out.ref)):
        return
    draft.move(State.RESULT_UNAVAILABLE, Evidence.RESULT_UNAVAILABLE, cause_of("result", out.ref))


def _ended_after_result(draft: Draft, cause: str) -> bool:
    """A partial result of a job that ended failed or cancelled was collected (or could not
    be): the operation ends as the remote said, the result (if any) kept with it."""
    status = draft.op.remote_status
    if status not in (RemoteStatus.FAILED, RemoteStatus.CANCELLED):
        return False
    to, evidence = OBSERVED_MOVES[status]
    draft.move(to, evidence, cause)
    return True


def _on_interrupted(draft: Draft, out: o.Outcome) -> None:
    assert isinstance(out, o.Interrupted)
    if lookup_owed(draft.op, draft.now):
        # Past the create deadline, a call was cut (a create retry, or the owed lookup): it
        # was treated as sent already, and the lookup owed is made now.
        draft.set(inflight_attempt=None, create_attempts=draft.op.create_attempts + 1)
        draft.now_next()
        return
    # We cannot know whether the interrupted call reached the provider: treat it as sent.
    _on_ambiguous(draft, o.Ambiguous(reason="attempt interrupted", ref=out.attempt_id))
    if draft.op.state is State.CANCEL_REQUESTED:
        draft.set(cancel_sent=True)
    draft.now_next()


_LIVE = frozenset(State) - ENDS_AUTOMATION
_CREATING = frozenset({State.CREATE_PENDING, State.CREATE_UNKNOWN})
_WATCHING = frozenset({State.ACCEPTED, State.OBSERVING, State.CANCEL_REQUESTED, State.CANCELLING})
# Where each kind of outcome can arise: a call is only planned in these states, so an outcome
# anywhere else is a bug or a stale writer, refused rather than guessed at.
_WHERE: dict[type, frozenset[State]] = {
    o.Accepted: _CREATING,
    o.SyncResult: _CREATING,
    o.Rejected: _LIVE,
    o.Ambiguous: _LIVE,
    o.Throttled: _LIVE,
    o.Observed: _WATCHING,
    o.Found: frozenset({State.CREATE_UNKNOWN, State.RECONCILIATION}),
    o.CancelAcknowledged: frozenset({State.CANCEL_REQUESTED}),
    o.ResultChecked: frozenset({State.RESULT_COLLECTING}),
    o.ResultMissing: frozenset({State.RESULT_COLLECTING}),
    o.Interrupted: _LIVE,
    o.NoReconciliation: frozenset({State.CREATE_UNKNOWN}),
}

_HANDLERS: dict[type, Any] = {
    o.Accepted: _on_accepted,
    o.SyncResult: _on_sync_result,
    o.Rejected: _on_rejected,
    o.Ambiguous: _on_ambiguous,
    o.Throttled: _on_ambiguous,
    o.Observed: _on_observed,
    o.Found: _on_found,
    o.CancelAcknowledged: _on_cancel_ack,
    o.ResultChecked: _on_result_checked,
    o.ResultMissing: _on_result_missing,
    o.DeadlinePassed: local.on_deadline,
    o.CancelRequested: local.on_cancel_requested,
    o.Withdrawn: local.on_withdrawn,
    o.Interrupted: _on_interrupted,
    o.NoReconciliation: local.on_no_reconciliation,
    o.HumanDecision: local.on_decision,
}
