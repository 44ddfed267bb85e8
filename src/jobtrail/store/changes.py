"""The records the store's verbs take and give (store/engine.py `Store`), and the commit
rules written once for both dialects."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from jobtrail.core.audit import AuditEntry
from jobtrail.core.model import Attempt, Observation, Operation, Transition
from jobtrail.core.notices import Notice
from jobtrail.core.states import State
from jobtrail.store.codec import storable


@dataclass(frozen=True, kw_only=True)
class Change:
    """Everything one step changes for one operation, committed atomically.

    `operation` is the new record, carrying the version it was derived from. An owner (a
    worker holding the lease) passes its fencing number: the write is refused if the lease
    was taken over since. Anyone else passes None: then the write only checks the version,
    and never moves the poll time of an operation that a worker holds.
    """

    operation: Operation
    owner_fence: int | None = None
    before: Operation | None = None  # the record `operation` was derived from, if known
    transitions: Sequence[Transition] = ()
    observations: Sequence[Observation] = ()
    attempt_started: Attempt | None = None
    attempt_finished: Attempt | None = None
    # A safe read (status, result GET), recorded once with its outcome and no intent before.
    # Its status observation folds into the operation's open observation run when that run
    # saw the same remote state; then the read leaves no row of its own. Otherwise the
    # attempt is stored (and the open run, if any, is closed): errors and changes are facts.
    safe_read: Attempt | None = None
    audit: Sequence[AuditEntry] = ()
    release: bool = False
    # A non-owner asking for a status read now: if a worker holds the operation, its
    # releasing write makes the operation due at once rather than at its own next time.
    request_poll: bool = False
    # The notices to people this change raises (core/notices.py), written with it in its
    # transaction into the outbox, when it is applied.
    notices: Sequence[Notice] = ()


def folds(change: Change) -> bool:
    """Whether `change` is a status read alone, which the store folds into the operation's
    open observation run if that run saw the same remote state. The open run is the last
    status read, whose remote state the record holds, so a read of another state (against
    the record it was derived from) is known not to fold without asking the database."""
    before = change.before
    return (
        change.safe_read is not None
        and len(change.observations) == 1
        and change.observations[0].source == "status"
        and not change.transitions
        and change.attempt_started is None
        and change.attempt_finished is None
        and not change.operation.state.ends_automation
        and (
            before is None
            or (
                storable(before.remote_state) == storable(change.observations[0].remote_state)
                and before.remote_status is change.observations[0].remote_status
            )
        )
    )


# No status read is made before a remote job is known, so no run can be open in these.
_NO_RUN_YET = frozenset({State.CREATE_PENDING, State.CREATE_UNKNOWN, State.RECONCILIATION})


def closes_run(change: Change) -> bool:
    """Whether `change` (not folded) records a fact that ends the open observation run, if
    one can be open."""
    if change.before is not None and change.before.state in _NO_RUN_YET:
        return False
    return bool(
        change.observations
        or change.transitions
        or change.attempt_started is not None
        or change.attempt_finished is not None
        or change.safe_read is not None
    )


def must_sync(change: Change) -> bool:
    """Whether `change` must reach stable storage before its writer goes on. Everything
    does but a safe read that moves no state: losing one to a power cut loses a read that
    the next owner makes again (or a folded read's counters), never an intent, a
    transition, a decision or a result. Claims, renewals and releases need no sync either:
    their holder dies with the machine, and any later synced write carries them along."""
    return (
        change.safe_read is None
        or bool(change.transitions)
        or change.attempt_started is not None
        or change.attempt_finished is not None
    )


class Verdict(StrEnum):
    OK = "ok"
    FENCED_OUT = "fenced_out"  # the lease moved on: this writer must stop
    STALE = "stale"  # someone else changed the record first: reload and decide again
    DUPLICATE_EVENT = "duplicate_event"  # an observation's event id was seen before


@dataclass(frozen=True, kw_only=True)
class CommitResult:
    verdict: Verdict
    operation: Operation | None = None  # the record as stored after the write (or now, if stale)


# The commit verdict rules, written once for every store. A change's guarded update (by
# version, and by fence for an owner) either matches its row (OK) or is refused, and then:


def refusal(change: Change, current: Operation | None) -> Verdict:
    """The verdict on a refused change, given the record as stored now: FENCED_OUT when the
    writer is an owner whose fence moved on (the lease was taken over: it must stop), else
    STALE (someone else changed the record first, or it is gone: reload and decide again)."""
    if current is not None and change.owner_fence not in (None, current.fence):
        return Verdict.FENCED_OUT
    return Verdict.STALE


def kept_when_refused(change: Change, verdict: Verdict) -> Attempt | None:
    """What a refused change still records: a fenced-out owner's finished call, whose
    outcome is a fact whoever holds the lease now. A stale writer applies its outcome
    again, so it records nothing yet; a safe read is never recorded by a refused change."""
    if verdict is Verdict.FENCED_OUT:
        return change.attempt_finished
    return None


def audited(change: Change, verdict: Verdict, kind: str) -> bool:
    """Whether an audit entry of `kind` that the change carries is appended: every entry of
    an accepted change; of a fenced-out owner's, only the outcome of the call it made (the
    attempt it keeps, bound by that entry), since nothing else it carries was applied (its
    transitions, the intent of a call it will never make); a fenced-out safe read had no
    effect and leaves nothing."""
    if verdict is Verdict.OK:
        return True
    return (
        verdict is Verdict.FENCED_OUT
        and kind == "attempt.outcome"
        and change.safe_read is None
        and change.attempt_finished is not None
    )


@dataclass(frozen=True, kw_only=True)
class Claim:
    operation: Operation
    # When the operation became due: its poll time, or a taken-over lease's expiry. A claim
    # never changes the operation's next_poll_at (the lease lives in its own columns).
    was_due: datetime
