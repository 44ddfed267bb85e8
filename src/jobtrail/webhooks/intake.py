"""Recording a verified webhook event in the ledger.

An event is an observation, never a transition: it is stored with its event id (deduplicated
by the store's UNIQUE column, so a redelivery, even to another process, changes nothing) and
makes the operation due for a status read now. The worker's read is what moves the operation,
so an old event arriving late can never move it backwards, and success is declared only after
that read (DESIGN rule 8). The operation's `remote_state` keeps the last *read* word.
"""

from __future__ import annotations

import logging
from enum import StrEnum
from typing import Any

from jobtrail.core.audit import AuditEntry
from jobtrail.core.canonical import canonical_json
from jobtrail.core.events import StatusRead, asks_owner, read_at, status_read
from jobtrail.core.model import Observation, Operation
from jobtrail.core.retry import on_stale
from jobtrail.errors import ConcurrentUpdate, NotFound
from jobtrail.ledger import Ledger, Verdict
from jobtrail.providers.file.config import ProviderSpec
from jobtrail.webhooks.event import Event

log = logging.getLogger("jobtrail.webhooks")

_MAX_AUDITED_EVENT = 4096  # bytes of canonical JSON kept in the audit entry


class Recorded(StrEnum):
    ACCEPTED = "accepted"
    DUPLICATE = "duplicate"


def stored_event_id(spec: ProviderSpec, event: Event) -> str:
    """Event ids are unique per provider; the store's column is shared by all providers."""
    return f"{spec.name}:{event.event_id}"


async def record_event(ledger: Ledger, spec: ProviderSpec, event: Event) -> str:
    """Record `event` for the operation holding its remote job; "accepted" or "duplicate".

    Raises NotFound when no operation of this provider holds the job, and ConcurrentUpdate
    when the operation kept changing under us (the sender retries later)."""
    actor = f"webhook:{spec.name}"

    async def once() -> str | None:
        op = await ledger.find_by_remote_job(spec.name, event.job_id)
        if op is None:
            raise NotFound(
                f"no operation of provider {spec.name!r} holds remote job {event.job_id!r}"
            )
        now = ledger.now()
        read = status_read(op, now)  # the core's rule (core/events.py)
        observation = Observation(
            operation_id=op.operation_id,
            source="webhook",
            observed_at=now,
            remote_state=event.remote_state,
            remote_status=event.remote_status,
            provider_updated_at=event.provider_updated_at,
            ref=event.event_id,
            event_id=stored_event_id(spec, event),
        )
        entry = AuditEntry(
            at=now,
            operation_id=op.operation_id,
            kind="webhook.received",
            actor=actor,
            data=_audit_data(spec, event, read),
        )
        verdict = await ledger.record_webhook(
            op, observation, entry, read_at=read_at(read, now), request_poll=asks_owner(read)
        )
        if verdict is Verdict.DUPLICATE_EVENT:
            log.info("webhook event seen before", extra=_fields(op, spec, event))
            return Recorded.DUPLICATE.value
        if verdict is Verdict.OK:
            log.info("webhook event recorded: %s", read.value, extra=_fields(op, spec, event))
            return Recorded.ACCEPTED.value
        return None  # the operation changed meanwhile: read it again

    changing = ConcurrentUpdate(
        f"the operation holding remote job {event.job_id!r} kept changing; deliver again"
    )
    return await on_stale(once, changing)


def _audit_data(spec: ProviderSpec, event: Event, read: StatusRead) -> dict[str, Any]:
    redactor = spec.redactor.extended(values=spec.secret_values())
    document = redactor.json(event.document)
    size = len(canonical_json(document).encode("utf-8"))
    return {
        "provider": spec.name,
        "event_id": event.event_id,
        "delivery_id": event.delivery_id,
        "remote_job_id": event.job_id,
        "remote_state": event.remote_state,
        "remote_status": event.remote_status.value,
        "provider_updated_at": event.provider_updated_at,
        "status_read": read.value,
        "event": document if size <= _MAX_AUDITED_EVENT else {"bytes": size, "kept": False},
    }


def _fields(op: Operation, spec: ProviderSpec, event: Event) -> dict[str, Any]:
    return {
        "operation_id": op.operation_id,
        "trace_id": op.trace_id,
        "remote_job_id": op.remote_job_id,
        "state": op.state.value,
        "provider": spec.name,
        "event_id": event.event_id,
        "remote_state": event.remote_state,
    }
