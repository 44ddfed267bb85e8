"""What an operation's state allows a person or an agent to do: cancel it, resolve it (and
with which decisions), extend one of its deadlines. Every surface asks here, and the ledger
applies the same answer, so no page offers what the ledger then refuses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from jobtrail.core.model import Operation
from jobtrail.core.outcomes import Decision
from jobtrail.core.states import REMOTE_MAY_RUN, State

Deadline = Literal["result", "cancel"]

# States in which a cancel intent may be recorded: a remote job may run (or none was sent
# yet), and no person has to decide first.
CANCELLABLE = (REMOTE_MAY_RUN | {State.CREATE_PENDING}) - {
    State.NEEDS_HUMAN,
    State.CANCELLATION_UNCONFIRMED,
}

# The decisions that resolve each state that waits for a person.
_RESOLUTIONS: dict[State, tuple[Decision, ...]] = {
    State.NEEDS_HUMAN: (Decision.ADOPT, Decision.MARK_FAILED, Decision.RETRY_AS_NEW),
    State.RESULT_VALIDATION_FAILED: (
        Decision.MARK_FAILED,
        Decision.ACCEPT_AS_IS,
        Decision.COLLECT_AGAIN,
    ),
}
_EXTENDS: dict[State, Deadline] = {
    State.RESULT_TIMED_OUT: "result",
    State.CANCELLATION_UNCONFIRMED: "cancel",
}


@dataclass(frozen=True, kw_only=True)
class Cancel:
    """Whether a cancel may be asked for now, and why (or why not) in words."""

    allowed: bool  # a new intent would be recorded
    asked: bool  # an intent is recorded and may still act: asking again changes nothing
    why: str


def cancellability(op: Operation) -> Cancel:
    """Whether `op` may be cancelled now, judged from its state, its recorded intent and
    its provider's declared capabilities, in that order."""
    oid, state = op.operation_id, op.state
    if state.ends_automation and state not in REMOTE_MAY_RUN:
        why = f"{oid} already ended ({state}); there is no running job to cancel"
        return Cancel(allowed=False, asked=False, why=why)
    if op.cancel_intent is not None:
        intent = op.cancel_intent
        why = (
            f"a cancel was asked by {intent.actor} ({intent.reason}); asking again changes nothing"
        )
        return Cancel(allowed=False, asked=True, why=why)
    if not op.capabilities.cancel:
        why = (
            f"provider {op.provider!r} declares no cancel endpoint, so {oid} cannot be "
            "cancelled through jobtrail; it will run to its end"
        )
        return Cancel(allowed=False, asked=False, why=why)
    if state is State.NEEDS_HUMAN:
        why = f"{oid} waits for a human decision first (resolve); cancel once a job is adopted"
        return Cancel(allowed=False, asked=False, why=why)
    if state not in CANCELLABLE:
        why = f"{oid} is {state}; there is no running job to cancel"
        return Cancel(allowed=False, asked=False, why=why)
    return Cancel(
        allowed=True,
        asked=False,
        why="a cancel may be asked: the worker sends it once and keeps observing until the "
        "provider confirms it",
    )


def awaiting_adoption(op: Operation) -> bool:
    """An operation recorded to adopt a job the census found (`candidate_job_id`): nothing
    was sent for it, nothing will be (it is never due), until a person adopts the job."""
    return (
        op.state is State.CREATE_PENDING
        and op.candidate_job_id is not None
        and op.create_attempts == 0
        and op.next_poll_at is None
    )


def resolutions(state: State) -> tuple[Decision, ...]:
    """The decisions that resolve `state` (none: it does not wait for a resolution)."""
    return _RESOLUTIONS.get(state, ())


def extendable(state: State) -> Deadline | None:
    """Which deadline a person may extend in `state` to resume automation, if any."""
    return _EXTENDS.get(state)


def decision_refusal(op: Operation, decision: Decision, job_id: str | None) -> str | None:
    """Why `decision` (with `job_id`) does not apply to `op` now, in the words a person
    typed, or None when it does."""
    if decision in (Decision.EXTEND, Decision.EXTEND_CANCEL):
        wanted: Deadline = "cancel" if decision is Decision.EXTEND_CANCEL else "result"
        fits = extendable(op.state)
        if fits == wanted:
            return None
        if fits is not None:
            return (
                f"{op.operation_id} is {op.state}: it waits on the {fits} deadline, not the "
                f"{wanted} deadline; extend that one (--{fits}-deadline)"
            )
        return f"{op.operation_id} is {op.state}: no deadline of it can be extended"
    if decision is Decision.ADOPT and awaiting_adoption(op):
        if job_id == op.candidate_job_id:
            return None
        return f"{op.operation_id} was recorded to adopt {op.candidate_job_id!r}, not {job_id!r}"
    allowed = resolutions(op.state)
    if decision not in allowed:
        head = f"the decision '{decision.spoken}' does not apply in state {op.state}"
        if not allowed:
            return f"{head}: {op.operation_id} waits for no decision"
        return f"{head}; use {', '.join(d.spoken for d in allowed)}"
    if job_id and decision is not Decision.ADOPT:
        return (
            f"--job-id goes with adopt only: '{decision.spoken}' would drop {job_id!r}; "
            "adopt it, or decide without a job id"
        )
    return None
