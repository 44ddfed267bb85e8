"""What a verified webhook event asks of an operation's schedule (DESIGN rule 8: an event
is an observation; a status read follows before anything is declared).

An event makes the operation due for a status read now, unless automation ended for it
(nothing to read for), it is due already (nothing to move), or a worker holds it (the
worker is asked for one more read when it gives the lease back, so the read is never
lost, and its poll time is left to it)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from jobtrail.core.leases import lease_alive
from jobtrail.core.model import Operation


class StatusRead(StrEnum):
    """What the event did to the operation's schedule."""

    SCHEDULED = "scheduled_now"
    ALREADY_DUE = "already_due"
    LEFT_TO_OWNER = "left_to_lease_owner"  # a worker holds it and is acting on it now
    NOT_NEEDED = "not_needed"  # automation ended for this operation


def status_read(op: Operation, now: datetime) -> StatusRead:
    """What an event arriving at `now` does to `op`'s next status read."""
    if op.state.ends_automation:
        return StatusRead.NOT_NEEDED
    if lease_alive(op, now):
        return StatusRead.LEFT_TO_OWNER
    if op.next_poll_at is not None and op.next_poll_at <= now:
        return StatusRead.ALREADY_DUE
    return StatusRead.SCHEDULED


def read_at(read: StatusRead, now: datetime) -> datetime | None:
    """The poll time to write (None: keep the one stored). `now` even for a leased
    operation: the store keeps a leased operation's poll time, and should the lease be
    given back before the event's commit, the read still happens now."""
    return None if read in (StatusRead.NOT_NEEDED, StatusRead.ALREADY_DUE) else now


def asks_owner(read: StatusRead) -> bool:
    """Whether a worker holding the operation is asked for a read when it releases it."""
    return read is not StatusRead.NOT_NEEDED
