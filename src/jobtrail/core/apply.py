"""`apply(operation, outcome, now)`: turn one outcome into transitions and an updated record.

Every state change goes through `_Step.move`, which checks the transition table, so no
outcome can move an operation without the evidence the table asks for. Facts that change no
state (a running observation, a throttled call) only update the record and the schedule.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from jobtrail.core import outcomes as o
from jobtrail.core.model import Observation, Operation, Transition, evolve
from jobtrail.core.schedule import Backoff, next_call_at
from jobtrail.core.states import (
    ENDS_AUTOMATION,
    Evidence,
    RemoteStatus,
    State,
    check_transition,
)
from jobtrail.errors import ActionRefused


@dataclass(frozen=True, kw_only=True)
class Policy:
    """Scheduling choices. `rand` is the only source of randomness the core uses."""

    rand: random.Random
    poll: Backoff = field(default_factory=Backoff)
    retry: Backoff = field(default_factory=lambda: Backoff(base=1.0, cap=30.0))


@dataclass(frozen=True, kw_only=True)
class Applied:
    operation: Operation
    transitions: tuple[Transition, ...]
    observations: tuple[Observation, ...]


_OBSERVED = {
    RemoteStatus.SUCCEEDED: (State.RESULT_COLLECTING, Evidence.OBSERVED_SUCCEEDED),
    RemoteStatus.FAILED: (State.FAILED, Evidence.OBSERVED_FAILED),
    RemoteStatus.CANCELLED: (State.CANCELLED, Evidence.OBSERVED_CANCELLED),
}


class _Step:
    def __init__(self, op: Operation, now: datetime, actor: str, policy: Policy) -> None:
        self.op, self.now, self.actor, self.policy = op, now, actor, policy
        self.transitions: list[Transition] = []
        self.observations: list[Observation] = []

    def move(self, to: State, evidence: Evidence, cause: str, actor: str | None = None) -> None:
        check_transition(self.op.state, to, evidence)
        self.transitions.append(
            Transition(
                operation_id=self.op.operation_id,
                at=self.now,
                actor=actor or self.actor,
                from_state=self.op.state,
                to_state=to,
                evidence=evidence,
                cause=cause,
                remote_job_id=self.op.remote_job_id,
            )
        )
        self.op = evolve(self.op, state=to)

    def set(self, **changes: Any) -> None:
        self.op = evolve(self.op, **changes)

    def now_next(self) -> None:
        self.set(next_poll_at=self.now)

    def schedule_poll(self, retry_after: str | None) -> None:
        when = next_call_at(
            now=self.now,
            attempt=self.op.poll_count,
            retry_after=retry_after,
            backoff=self.policy.poll,
            rand=self.policy.rand,
        )
        self.set(next_poll_at=when, poll_count=self.op.poll_count + 1)

    def schedule_retry(self, retry_after: str | None, attempt: int) -> None:
        when = next_call_at(
            now=self.now,
            attempt=attempt,
            retry_after=retry_after,
            backoff=self.policy.retry,
            rand=self.policy.rand,
        )
        self.set(next_poll_at=when)

    def observe(self, source: str, outcome: o.Observed | o.Accepted, ref: str | None) -> None:
        progress = outcome.progress if isinstance(outcome, o.Observed) else None
        updated = outcome.provider_updated_at if isinstance(outcome, o.Observed) else None
        self.observations.append(
            Observation(
                operation_id=self.op.operation_id,
                source=source,
                observed_at=self.now,
                remote_state=outcome.remote_state,
                remote_status=outcome.remote_status,
                provider_updated_at=updated,
                progress=progress,
                ref=ref,
            )
        )
        changes: dict[str, Any] = {
            "remote_state": outcome.remote_state,
            "remote_status": outcome.remote_status,
        }
        if progress is not None:
            changes["progress"] = progress
        self.set(**changes)

    def result(self) -> Applied:
        op = evolve(self.op, updated_at=self.now)
        if op.state.ends_automation:
            op = evolve(op, next_poll_at=None)
        return Applied(
            operation=op,
            transitions=tuple(self.transitions),
            observations=tuple(self.observations),
        )


def apply(
    op: Operation, outcome: o.Outcome, now: datetime, *, actor: str, policy: Policy
) -> Applied:
    """The transitions and updated record that `outcome` justifies for `op` at `now`."""
    allowed = _WHERE.get(type(outcome))
    if allowed is not None and op.state not in allowed:
        raise ActionRefused(
            f"a {type(outcome).__name__} outcome cannot apply to an operation in {op.state}"
        )
    step = _Step(op, now, actor, policy)
    handler = _HANDLERS.get(type(outcome))
    if handler is None:  # pragma: no cover - every outcome type has a handler
        raise TypeError(f"no handler for {type(outcome).__name__}")
    handler(step, outcome)
    return step.result()


def _cause(kind: str, ref: str | None) -> str:
    return f"{kind}:{ref}" if ref else kind


def _follow_observation(step: _Step, status: RemoteStatus, cause: str) -> None:
    """Move on what the remote state says; a non-terminal state moves nothing but
    accepted -> observing."""
    if status in _OBSERVED:
        to, evidence = _OBSERVED[status]
        step.move(to, evidence, cause)
    elif step.op.state is State.ACCEPTED:
        step.move(State.OBSERVING, Evidence.OBSERVED_RUNNING, cause)


def _on_accepted(step: _Step, out: o.Outcome) -> None:
    assert isinstance(out, o.Accepted)
    op = step.op
    cause = _cause("create_response", out.ref)
    step.set(inflight_attempt=None, create_attempts=op.create_attempts + 1)
    if op.state is State.CREATE_UNKNOWN and op.capabilities.list_by_reference:
        # Our first answer was lost; before trusting this one, check it against what the
        # provider lists under our reference (a different id there is a contract violation).
        step.set(candidate_job_id=out.job_id, status_url=out.status_url)
        step.move(State.RECONCILIATION, Evidence.CREATE_ACCEPTED, cause)
        step.now_next()
        return
    step.set(remote_job_id=out.job_id, status_url=out.status_url)
    step.move(State.ACCEPTED, Evidence.CREATE_ACCEPTED, cause)
    _after_accept(step, out, cause)


def _after_accept(step: _Step, out: o.Accepted | None, cause: str) -> None:
    if out is not None:
        step.observe("create", out, out.ref)
        if out.remote_status.terminal:
            _follow_observation(step, out.remote_status, cause)
            if step.op.state is State.RESULT_COLLECTING:
                step.now_next()
            return
    if step.op.cancel_intent is not None:
        _on_cancel_requested(step, o.CancelRequested(intent=step.op.cancel_intent))
        return
    step.set(poll_count=0)
    step.schedule_poll(out.retry_after if out else None)


def _on_sync_result(step: _Step, out: o.Outcome) -> None:
    assert isinstance(out, o.SyncResult)
    step.set(
        inflight_attempt=None,
        create_attempts=step.op.create_attempts + 1,
        remote_job_id=out.job_id,
        remote_status=RemoteStatus.SUCCEEDED,
        inline_result=out.location,
    )
    step.move(State.RESULT_COLLECTING, Evidence.SYNC_RESULT, _cause("create_response", out.ref))
    step.now_next()


def _on_rejected(step: _Step, out: o.Outcome) -> None:
    assert isinstance(out, o.Rejected)
    step.set(inflight_attempt=None)
    if step.op.state in (State.CREATE_PENDING, State.CREATE_UNKNOWN):
        step.set(create_attempts=step.op.create_attempts + 1)
        step.move(State.FAILED, Evidence.CREATE_REJECTED, _cause("create_response", out.ref))
        step.set(next_poll_at=None)
    elif step.op.state is State.CANCEL_REQUESTED:
        # The provider refused the cancel (for example: already finished). It was sent once;
        # keep observing to learn the real terminal state.
        step.set(cancel_sent=True)
        step.now_next()
    else:
        step.schedule_retry(None, step.op.poll_count)


def _on_ambiguous(step: _Step, out: o.Outcome) -> None:
    assert isinstance(out, o.Ambiguous | o.Throttled)
    op = step.op
    step.set(inflight_attempt=None)
    sent = isinstance(out, o.Ambiguous)
    retry_after = out.retry_after if isinstance(out, o.Throttled) else None
    if op.state is State.CREATE_PENDING:
        step.set(create_attempts=op.create_attempts + 1)
        if sent:
            step.move(State.CREATE_UNKNOWN, Evidence.CREATE_AMBIGUOUS, _cause("create", out.ref))
        step.schedule_retry(retry_after, op.create_attempts)
    elif op.state in (State.CREATE_UNKNOWN, State.RECONCILIATION):
        step.set(create_attempts=op.create_attempts + 1)
        step.schedule_retry(retry_after, op.create_attempts)
    elif op.state is State.CANCEL_REQUESTED and not op.cancel_sent:
        # An ambiguous cancel may have been heard: never send it again, observe instead.
        step.set(cancel_sent=sent)
        if sent:
            step.schedule_poll(None)
        else:
            step.schedule_retry(retry_after, 0)
    else:
        step.schedule_poll(retry_after)


def _on_observed(step: _Step, out: o.Outcome) -> None:
    assert isinstance(out, o.Observed)
    step.set(inflight_attempt=None)
    step.observe("status", out, out.ref)
    cause = _cause("observation", out.ref)
    _follow_observation(step, out.remote_status, cause)
    state = step.op.state
    if state is State.RESULT_COLLECTING:
        step.now_next()
    elif state.ends_automation:
        step.set(next_poll_at=None)
    elif state is State.CANCEL_REQUESTED and not step.op.cancel_sent:
        step.now_next()
    else:
        step.schedule_poll(out.retry_after)


def _on_found(step: _Step, out: o.Outcome) -> None:
    assert isinstance(out, o.Found)
    step.set(inflight_attempt=None)
    cause = _cause("reconcile", out.ref)
    if step.op.state is State.CREATE_UNKNOWN:
        step.move(State.RECONCILIATION, Evidence.RECONCILE_LOOKUP, cause)
    candidate, found = step.op.candidate_job_id, tuple(dict.fromkeys(out.job_ids))
    expected = (candidate,) if candidate else None
    if len(found) > 1 or (candidate and found and found != expected):
        ids = tuple(dict.fromkeys((*((candidate,) if candidate else ()), *found)))
        step.set(conflicting_job_ids=ids, next_poll_at=None)
        step.move(State.NEEDS_HUMAN, Evidence.CONTRACT_VIOLATION, cause)
    elif len(found) == 1:
        step.set(remote_job_id=found[0], candidate_job_id=None)
        step.move(State.ACCEPTED, Evidence.RECONCILED_FOUND, cause)
        _after_accept(step, None, cause)
    elif candidate:
        # The provider named a job for our token but does not list it (yet): inconclusive.
        step.schedule_retry(None, step.op.create_attempts)
    else:
        step.move(State.CREATE_PENDING, Evidence.ABSENCE_PROVEN, cause)
        step.now_next()


def _on_cancel_ack(step: _Step, out: o.Outcome) -> None:
    assert isinstance(out, o.CancelAcknowledged)
    step.set(inflight_attempt=None, cancel_sent=True, poll_count=0)
    step.move(State.CANCELLING, Evidence.CANCEL_ACKNOWLEDGED, _cause("cancel_response", out.ref))
    step.schedule_poll(None)


def _on_result_checked(step: _Step, out: o.Outcome) -> None:
    assert isinstance(out, o.ResultChecked)
    cause = _cause("result", out.ref)
    step.set(inflight_attempt=None, result=out.summary, next_poll_at=None)
    if out.summary.valid:
        step.move(State.SUCCEEDED, Evidence.RESULT_VALIDATED, cause)
    else:
        step.move(State.RESULT_VALIDATION_FAILED, Evidence.RESULT_INVALID, cause)


def _on_result_missing(step: _Step, out: o.Outcome) -> None:
    assert isinstance(out, o.ResultMissing)
    step.set(inflight_attempt=None, next_poll_at=None)
    step.move(State.RESULT_UNAVAILABLE, Evidence.RESULT_UNAVAILABLE, _cause("result", out.ref))


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


def _on_deadline(step: _Step, out: o.Outcome) -> None:
    assert isinstance(out, o.DeadlinePassed)
    to = _DEADLINE_MOVES.get((out.deadline, step.op.state))
    if to is None:
        raise ActionRefused(f"the {out.deadline} deadline does not apply in {step.op.state}")
    step.move(to, _DEADLINE_EVIDENCE[out.deadline], f"deadline:{out.deadline}")
    step.set(next_poll_at=None)


def _on_cancel_requested(step: _Step, out: o.Outcome) -> None:
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


def _on_withdrawn(step: _Step, out: o.Outcome) -> None:
    assert isinstance(out, o.Withdrawn)
    intent = out.intent
    step.move(
        State.FAILED, Evidence.WITHDRAWN, f"human_request:{intent.request_id}", actor=intent.actor
    )
    step.set(next_poll_at=None)


def _on_interrupted(step: _Step, out: o.Outcome) -> None:
    assert isinstance(out, o.Interrupted)
    # We cannot know whether the interrupted call reached the provider: treat it as sent.
    _on_ambiguous(step, o.Ambiguous(reason="attempt interrupted", ref=out.attempt_id))
    if step.op.state is State.CANCEL_REQUESTED:
        step.set(cancel_sent=True)
    step.now_next()


def _on_no_reconciliation(step: _Step, out: o.Outcome) -> None:
    step.move(State.NEEDS_HUMAN, Evidence.NO_RECONCILIATION, "provider_capabilities")
    step.set(next_poll_at=None)


def _on_decision(step: _Step, out: o.Outcome) -> None:
    assert isinstance(out, o.HumanDecision)
    op, cause = step.op, f"human_decision:{out.request_id}"
    match (out.decision, op.state):
        case (o.Decision.ADOPT, State.NEEDS_HUMAN):
            if not out.job_id:
                raise ActionRefused("adopting needs the remote job id to adopt")
            step.set(remote_job_id=out.job_id, candidate_job_id=None)
            step.move(State.ACCEPTED, Evidence.HUMAN_DECISION, cause, actor=out.actor)
            step.set(poll_count=0)
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
    o.DeadlinePassed: _on_deadline,
    o.CancelRequested: _on_cancel_requested,
    o.Withdrawn: _on_withdrawn,
    o.Interrupted: _on_interrupted,
    o.NoReconciliation: _on_no_reconciliation,
    o.HumanDecision: _on_decision,
}
