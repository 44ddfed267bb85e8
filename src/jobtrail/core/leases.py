"""Whether a lease still holds: the one test the worker, `run`, the webhook intake and the
dashboard apply to an operation's lease (the store applies the same rule in its claim
query: a lease expiring at or before now is free), whether a call with an effect may still
be sent under a lease renewed a while ago, and how long a takeover can take after a worker
dies mid-call.

Which clock: every `now` handed to these rules is the ledger's (store/ledger_clock.py:
PostgreSQL's server clock; on SQLite the machine's wall clock as every process on it reads
it), never a worker's own; the store judges a lease's end on the ledger's clock as well
(`lease_until`). `may_send` is given a duration, measured on the machine's boot clock
(Ledger.stopwatch), which runs at the ledger clock's rate and which no step or faker of a
process's clock moves.
"""

from __future__ import annotations

from datetime import datetime

from jobtrail.core.model import Operation


def lease_alive(op: Operation, now: datetime) -> bool:
    """Whether a worker holds `op` at `now`: it has a lease owner whose lease expires later."""
    return (
        op.lease_owner is not None and op.lease_expires_at is not None and op.lease_expires_at > now
    )


def lease_left(op: Operation, now: datetime) -> float | None:
    """Seconds left on `op`'s lease at `now` (negative once expired), or None without one."""
    if op.lease_expires_at is None:
        return None
    return (op.lease_expires_at - now).total_seconds()


EFFECT_MARGIN = 1.0  # seconds kept for recording the outcome after a call's own timeout


def effect_lease(lease_for: float, call_timeout: float, margin: float = EFFECT_MARGIN) -> float:
    """The lease (seconds) a call with an effect is made under: the worker's, or longer where
    the call's timeout would not leave as much again for the renewal's answer. It is also
    how long a takeover can take when the worker dies in the middle of that call."""
    return max(lease_for, 2 * call_timeout + margin)


def may_send(
    acknowledged_after: float, call_timeout: float, lease_for: float, margin: float
) -> bool:
    """Whether a call with an effect may be sent now, `acknowledged_after` seconds (on this
    worker's monotonic clock) after it asked the ledger to renew its lease for `lease_for`
    seconds and to record the call's intent. The renewal took effect on the ledger's clock
    at some moment after it was asked for, so the lease ends no sooner than `lease_for`
    after the asking (clocks run at one rate; only their readings disagree): the call and
    its recording (`call_timeout` + `margin`) must fit in what is left of that. An
    acknowledgement that came late (the link to the database cut and healed) leaves too
    little: the lease may have lapsed and another worker may have sent the call already,
    so this one must not (the intent stays recorded: whoever drives the operation next
    reconciles as after any interrupted call)."""
    return acknowledged_after + call_timeout + margin <= lease_for
