"""Whether a lease still holds: the one test the worker, `run`, the webhook intake and the
dashboard apply to an operation's lease (the store applies the same rule in its claim
query: a lease expiring at or before now is free)."""

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
