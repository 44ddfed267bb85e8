"""What a verified webhook event asks of an operation's schedule (DESIGN rule 8: an event
is an observation; a status read follows before anything is declared).

An event makes the operation due for a status read now, unless automation ended for it
(nothing to read for), it is due already (nothing to move), or a worker holds it (the
worker is asked for one more read when it gives the lease back, so the read is never
lost, and its poll time is left to it)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from jobtrail.core.leases import lease_alive
from jobtrail.core.model import Operation
from jobtrail.core.states import RemoteStatus

AUDITED_EVENT_BYTES = 4096  # the largest event document an audit entry keeps whole


@dataclass(frozen=True, kw_only=True)
class Event:
    """A verified webhook delivery, read through the provider file's [webhooks] paths: only
    what the event says (webhooks/event.py reads it)."""

    event_id: str
    delivery_id: str | None
    job_id: str
    remote_state: str
    remote_status: RemoteStatus
    provider_updated_at: str | None
    document: Any  # the parsed body, for the audit entry (redacted on its way to the store)
    size: int  # bytes of the document as canonical JSON


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


def event_audit(provider: str, event: Event, read: StatusRead) -> dict[str, Any]:
    """The audit entry's data for `event` arriving at an operation of `provider`."""
    kept = event.size <= AUDITED_EVENT_BYTES
    return {
        "provider": provider,
        "event_id": event.event_id,
        "delivery_id": event.delivery_id,
        "remote_job_id": event.job_id,
        "remote_state": event.remote_state,
        "remote_status": event.remote_status.value,
        "provider_updated_at": event.provider_updated_at,
        "status_read": read.value,
        "event": event.document if kept else {"bytes": event.size, "kept": False},
    }
