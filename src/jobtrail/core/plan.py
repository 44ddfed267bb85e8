"""`plan(operation, now)`: the next thing to do for an operation, decided from its record alone.

This is the article's reference loop, read one step at a time. The worker asks for the plan,
carries out the action, and hands the outcome to `apply`. A restarted worker asks again and
gets the same answer, because everything the plan needs is in the record.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from jobtrail.core import outcomes as o
from jobtrail.core.model import AttemptKind, Operation
from jobtrail.core.states import State

# In create_unknown, how many same-token retries may go without a job id (unreadable 202s,
# 5xx, timeouts, "in flight" 409s) before the declared lookup is asked instead: the lost
# first attempt plus this many retries. Two unreadable answers in a row rarely heal on the
# third, and a lookup is a safe read that can settle the question either way.
RETRIES_BEFORE_LOOKUP = 2


@dataclass(frozen=True, kw_only=True)
class Call:
    """Make one external call of this kind (intent recorded first)."""

    kind: AttemptKind
    retry: bool = False  # for create: a retry with the stored token

    def describe(self) -> str:
        return {
            AttemptKind.CREATE: "retry create with the stored token"
            if self.retry
            else "send create",
            AttemptKind.STATUS: "poll status",
            AttemptKind.CANCEL: "send cancel",
            AttemptKind.RESULT: "collect result",
            AttemptKind.RECONCILE: "look the job up (reconcile)",
        }[self.kind]


@dataclass(frozen=True, kw_only=True)
class Settle:
    """Apply a local outcome (a deadline, a recorded request) without any call."""

    outcome: o.LocalOutcome

    def describe(self) -> str:
        match self.outcome:
            case o.DeadlinePassed(deadline=d):
                return f"{d} deadline passed: escalate"
            case o.CancelRequested():
                return "act on the recorded cancel request"
            case o.Withdrawn():
                return "withdraw: cancel requested before any create was sent"
            case o.Interrupted():
                return "settle an interrupted call (its outcome never recorded): taken as sent"
            case o.NoReconciliation():
                return "escalate: the provider offers no reconciliation"
            case _:
                return "apply a recorded decision"


@dataclass(frozen=True, kw_only=True)
class Wait:
    until: datetime
    then: Call | Settle

    def describe(self) -> str:
        return f"wait until {self.until.isoformat()} then {self.then.describe()}"


class Halt(StrEnum):
    """Why nothing more will happen automatically."""

    ENDED = "the operation ended"
    NEEDS_HUMAN = "waiting for a recorded human decision"


@dataclass(frozen=True, kw_only=True)
class Nothing:
    why: Halt

    def describe(self) -> str:
        return str(self.why)


Action = Call | Settle | Wait | Nothing


def plan(op: Operation, now: datetime) -> Action:
    if op.state is State.NEEDS_HUMAN:
        return Nothing(why=Halt.NEEDS_HUMAN)
    if op.state.ends_automation:
        return Nothing(why=Halt.ENDED)
    if op.inflight_attempt is not None:
        return Settle(outcome=o.Interrupted(attempt_id=op.inflight_attempt))
    settled = _settlement(op, now)
    if settled is not None:
        return settled
    call = call_for(op, now)
    if isinstance(call, Settle):
        return call
    if op.next_poll_at is not None and now < op.next_poll_at:
        return Wait(until=op.next_poll_at, then=call)
    return call


def _settlement(op: Operation, now: datetime) -> Settle | None:
    """Deadlines and recorded requests, which take precedence over any call."""
    state = op.state
    if state is State.CREATE_PENDING and op.cancel_intent is not None:
        return Settle(outcome=o.Withdrawn(intent=op.cancel_intent))
    if state in (State.CREATE_PENDING, State.CREATE_UNKNOWN, State.RECONCILIATION):
        if now >= op.create_deadline and not lookup_owed(op, now):
            return Settle(outcome=o.DeadlinePassed(deadline=o.Deadline.CREATE))
        return None
    if state in (State.ACCEPTED, State.OBSERVING):
        if op.cancel_intent is not None:
            return Settle(outcome=o.CancelRequested(intent=op.cancel_intent))
        if now >= watched_until(op) and not _one_more_read(op):
            return Settle(outcome=o.DeadlinePassed(deadline=o.Deadline.RESULT))
        return None
    if state in (State.CANCEL_REQUESTED, State.CANCELLING):
        if op.cancel_deadline is not None and now >= op.cancel_deadline:
            return Settle(outcome=o.DeadlinePassed(deadline=o.Deadline.CANCEL))
        return None
    if state is State.RESULT_COLLECTING and now >= watched_until(op) and not _one_more_read(op):
        return Settle(outcome=o.DeadlinePassed(deadline=o.Deadline.RESULT))
    return None


def _one_more_read(op: Operation) -> bool:
    """A job the provider was told to stop by itself has stopped by `watched_until`: when
    nothing was read of it since (jobtrail was away), it is read once more, to learn how it
    ended and keep what it finished, before its result deadline is called passed."""
    if op.request.remote_deadline is None:
        return False
    return (op.updated_at or op.created_at) < watched_until(op)


def watched_until(op: Operation) -> datetime:
    """When the result deadline ends the watch: the result deadline itself, or, when the
    provider was given a deadline of its own (core/remote_deadline.py), the time by which it
    has stopped the job by itself (that deadline after the last create, plus the cancel
    timeout to wind down), so that its end, and what it finished, are still read."""
    given = op.request.remote_deadline
    if given is None or op.create_sent_at is None:
        return op.result_deadline
    stopped = op.create_sent_at + timedelta(seconds=given) + op.cancel_timeout
    return max(op.result_deadline, stopped)


def deadline_in_force(op: Operation) -> datetime | None:
    """The deadline that ends the current phase: no wait may reach past it, so whatever a
    provider hints, the worker is awake when it passes (DESIGN rule 13)."""
    state = op.state
    if state in (State.CREATE_PENDING, State.CREATE_UNKNOWN, State.RECONCILIATION):
        return op.create_deadline
    if state in (State.ACCEPTED, State.OBSERVING, State.RESULT_COLLECTING):
        return watched_until(op)
    if state in (State.CANCEL_REQUESTED, State.CANCELLING):
        return op.cancel_deadline
    return None


def lookup_owed(op: Operation, now: datetime) -> bool:
    """Whether `op`, past its create deadline at `now`, is owed one lookup before a person is
    asked: a create was sent and its outcome is unknown (create_unknown: no lookup has
    answered since, as any answer moves it on), and the provider declares a lookup, which
    may find the job in one call that creates nothing. A worker that died mid-create is
    taken over only when the call's lease ends (twice the call timeout at least), which may
    be past a short create deadline; the lookup is made then, never a resend."""
    return op.state is State.CREATE_UNKNOWN and op.capabilities.lookup and now >= op.create_deadline


def absence_provable_at(op: Operation) -> datetime | None:
    """When a lookup that finds nothing becomes proof that no job exists: the provider's
    visibility window after the create was last sent (on the ledger's clock, as every time
    in the record); None if a miss never proves it."""
    window = op.capabilities.absent_after
    if window is None:
        return None
    sent = op.create_sent_at or op.updated_at or op.created_at
    return sent + timedelta(seconds=window)


def call_for(op: Operation, now: datetime | None = None) -> Call | Settle:
    """The call the state asks for (deadlines and waits aside) at `now` (None: before any
    deadline): the call whose outcome the next `apply` answers."""
    caps = op.capabilities
    match op.state:
        case State.CREATE_PENDING:
            return Call(kind=AttemptKind.CREATE, retry=op.create_attempts > 0)
        case State.CREATE_UNKNOWN if now is not None and lookup_owed(op, now):
            return Call(kind=AttemptKind.RECONCILE)
        case State.CREATE_UNKNOWN:
            retries_left = op.create_attempts <= RETRIES_BEFORE_LOOKUP or not caps.lookup
            if caps.same_token_retry and retries_left:
                return Call(kind=AttemptKind.CREATE, retry=True)
            if caps.lookup:
                return Call(kind=AttemptKind.RECONCILE)
            return Settle(outcome=o.NoReconciliation())
        case State.RECONCILIATION:
            return Call(kind=AttemptKind.RECONCILE)
        case State.CANCEL_REQUESTED if not op.cancel_sent:
            return Call(kind=AttemptKind.CANCEL)
        case State.RESULT_COLLECTING:
            return Call(kind=AttemptKind.RESULT)
        case _:
            return Call(kind=AttemptKind.STATUS)
