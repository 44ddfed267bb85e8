"""What happens next for an operation, and why, in words: the `next_step` of `status`,
`explain`, `run`, the dashboard and the agents' `get_job`, for every state. Where
automation has stopped it says whether a person is needed, whether the remote job may
still run, and what to do."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from jobtrail.core.leases import lease_alive
from jobtrail.core.model import Attempt, Operation, ProviderKind
from jobtrail.core.plan import Nothing, Wait, plan
from jobtrail.core.states import REMOTE_MAY_RUN, State
from jobtrail.core.words import iso, relative, when

PERSON = "a person must act: "
# The states that wait for a person (each says what to do in `halted`).
PERSON_STATES = frozenset(
    {
        State.NEEDS_HUMAN,
        State.RESULT_TIMED_OUT,
        State.CANCELLATION_UNCONFIRMED,
        State.RESULT_VALIDATION_FAILED,
    }
)


def next_step(op: Operation, now: datetime, attempts: Sequence[Attempt] = ()) -> str:
    """What jobtrail will do next for `op`, in words. With `op`'s `attempts`, a call in
    flight is named with the time it was sent (its recorded start)."""
    action = plan(op, now)
    if isinstance(action, Nothing):
        return halted(op)
    if op.inflight_attempt is not None:
        return in_flight(op, now, attempts)
    if isinstance(action, Wait):
        return f"{action.then.describe()} {when(action.until, now)}"
    if op.lease_owner:
        return f"{action.describe()} (in progress on {op.lease_owner})"
    return f"{action.describe()} now ({_waiting(op)})"


def in_flight(op: Operation, now: datetime, attempts: Sequence[Attempt] = ()) -> str:
    """A call whose intent is recorded and whose outcome is not yet: in flight while its
    worker's lease holds; interrupted (a crash) only once that lease lapsed with the call
    unsettled. Said from the record: the attempt's start, the lease's owner and expiry."""
    call = next((a for a in attempts if a.attempt_id == op.inflight_attempt), None)
    what = f"the {call.kind} call {call.attempt_id}" if call else f"the call {op.inflight_attempt}"
    sent = f" {iso(call.started_at)} ({relative(call.started_at, now)})" if call else ""
    if lease_alive(op, now):
        return f"{what} is in flight{' since' + sent if sent else ''} (owner {op.lease_owner})"
    if op.lease_owner is not None and op.lease_expires_at is not None:
        why = (
            f"interrupted by a crash: the lease of {op.lease_owner} lapsed at "
            f"{iso(op.lease_expires_at)} with the call unsettled"
        )
    else:
        why = "its outcome was never recorded, and no worker holds the operation"
    return (
        f"settle {what}{', sent' + sent if sent else ''}: {why}; it is taken as sent, its "
        f"answer unknown, now ({_waiting(op)})"
    )


def _waiting(op: Operation) -> str:
    if op.provider_kind is ProviderKind.CODE:
        return f"waiting for a worker that has {driver(op)}"
    return "waiting for a worker"


def halted(op: Operation) -> str:
    """Why nothing more happens by itself in `op`'s state, and who acts next."""
    match op.state:
        case State.SUCCEEDED:
            return "nothing: the operation succeeded; its result is stored"
        case State.FAILED:
            return "nothing: the operation ended failed"
        case State.CANCELLED:
            return "nothing: the provider reported the job cancelled"
        case State.RESULT_UNAVAILABLE:
            return "nothing: the job finished, but its result was not collected (see the timeline)"
        case State.RESULT_TIMED_OUT if seen_ended(op):
            return (
                PERSON + f"the result deadline passed, but the job was seen ended "
                f"{op.remote_state!r}: extend the result deadline (extend --result-deadline) "
                "to collect what it left"
            )
        case State.RESULT_TIMED_OUT:
            return (
                PERSON + "the result deadline passed and polling stopped; the remote job "
                "may still be running: extend the result deadline (extend --result-deadline) "
                "or cancel it"
            )
        case State.CANCELLATION_UNCONFIRMED:
            seen = f"last seen {op.remote_state!r}" if op.remote_state else "never seen ended"
            return (
                PERSON + f"the cancel was not confirmed before its deadline and the remote job "
                f"was {seen}: it may still be running. Check it with the provider, then "
                "extend the cancel deadline (extend --cancel-deadline) to keep waiting for "
                "the confirmation"
            )
        case State.RESULT_VALIDATION_FAILED:
            return (
                PERSON + "the result failed validation: mark the operation failed, accept "
                "the result as it is, or collect it again (resolve --decision mark-failed, "
                "accept-as-is or collect-again)"
            )
        case State.NEEDS_HUMAN:
            return PERSON + _needs_human(op)
    return "nothing: the operation ended"


def _needs_human(op: Operation) -> str:
    if op.conflicting_job_ids:
        return (
            f"the provider tied this operation to several jobs "
            f"({', '.join(op.conflicting_job_ids)}): adopt the one that is ours, mark it "
            "failed, or retry it as new (resolve --decision adopt --job-id ID, mark-failed "
            "or retry-as-new)"
        )
    if op.refused_reads:
        return (
            f"{op.refused_reads} status reads of job {op.remote_job_id} in a row were refused "
            "or unreadable: check the job with the provider, then adopt it to resume polling "
            "or mark the operation failed (resolve)"
        )
    return (
        "the create outcome could not be proven: find out whether the provider made a job, "
        "then adopt its id, mark the operation failed, or retry it as new (resolve)"
    )


_CREATING = frozenset({State.CREATE_PENDING, State.CREATE_UNKNOWN, State.RECONCILIATION})


def deadlines_shown(op: Operation) -> list[tuple[str, datetime]]:
    """The deadlines that still bear on `op`, by name: the create deadline while the create
    is unsettled, the result deadline until the operation ends (and after result_timed_out,
    which it caused), the cancel deadline while a cancel waits (and after
    cancellation_unconfirmed). A finished operation shows none."""
    state, shown = op.state, []
    if state in _CREATING:
        shown.append(("create", op.create_deadline))
    if not state.ends_automation or state is State.RESULT_TIMED_OUT:
        shown.append(("result", op.result_deadline))
    cancel_waits = not state.ends_automation or state is State.CANCELLATION_UNCONFIRMED
    if op.cancel_deadline is not None and cancel_waits:
        shown.append(("cancel", op.cancel_deadline))
    return shown


def needs_person(op: Operation) -> bool:
    """Whether nothing more happens for `op` until a person acts."""
    return op.state in PERSON_STATES


def other_jobs(op: Operation) -> tuple[str, ...]:
    """Jobs the provider tied to `op` that jobtrail does not follow: after an adopt, they
    may still be running (and costing) at the provider."""
    if op.state is State.NEEDS_HUMAN:
        return ()
    return tuple(i for i in op.conflicting_job_ids if i != op.remote_job_id)


def other_jobs_text(op: Operation) -> str | None:
    """What a person should know of `other_jobs(op)`, or None when there are none."""
    others = other_jobs(op)
    if not others:
        return None
    them = "it" if len(others) == 1 else "them"
    return (
        f"{', '.join(others)} may still be running at {op.provider}: jobtrail follows only "
        f"{op.remote_job_id}, and cannot cancel another job; cancel {them} with the "
        "provider (its console or API)"
    )


_ATTENTION = {
    State.CREATE_UNKNOWN: "create sent, outcome unknown: reconciling",
    State.RECONCILIATION: "looking for the original job",
    State.NEEDS_HUMAN: "waiting for a decision (resolve)",
    State.CANCELLATION_UNCONFIRMED: "cancel not confirmed before its deadline; the job may "
    "still run (extend the cancel deadline)",
    State.RESULT_TIMED_OUT: "result deadline passed; the job may still run",
    State.RESULT_UNAVAILABLE: "finished, but the result was not collected",
    State.RESULT_VALIDATION_FAILED: "the result failed validation (resolve: mark failed, "
    "accept as is or collect again)",
}


def attention_reason(op: Operation) -> str:
    """Why `op` is on the list of operations that need attention, in a few words."""
    if op.state is State.RESULT_TIMED_OUT and seen_ended(op):
        return "result deadline passed; the job was seen ended (extend it to collect)"
    return _ATTENTION.get(op.state, op.state.value)


def seen_ended(op: Operation) -> bool:
    """Whether the operation's own record holds a terminal observation of its job."""
    return op.remote_status is not None and op.remote_status.terminal


def remote_may_run(op: Operation) -> bool:
    """Whether a remote job may still be running under `op`'s name, as far as its record
    knows: never once the job was seen ended."""
    return op.state in REMOTE_MAY_RUN and not seen_ended(op)


def driver(op: Operation) -> str:
    """Which provider drives `op`, in words: "the code provider 'sfn' 1.2.0"."""
    if op.provider_kind is ProviderKind.CODE:
        version = f" {op.provider_version}" if op.provider_version else ""
        return f"the code provider {op.provider!r}{version}"
    return f"the HTTP provider {op.provider!r}"
