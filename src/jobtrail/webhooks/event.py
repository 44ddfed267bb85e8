"""A verified delivery read as an event, through the provider file's [webhooks] paths.

Only what the event says is kept (core/events.py `Event`): its id, the remote job it is
about, the provider's word for the job's state (mapped through [states]) and the provider's
own timestamp.
"""

from __future__ import annotations

from typing import Any

from jobtrail.core.canonical import canonical_json
from jobtrail.core.events import Event
from jobtrail.core.lookup import find
from jobtrail.errors import InvalidInput
from jobtrail.providers.file.config import ProviderSpec
from jobtrail.providers.http import parse
from jobtrail.webhooks.verify import Delivery, Refusal, WebhookRefused

_MAX_TEXT = 512


def read_event(spec: ProviderSpec, delivery: Delivery) -> Event:
    """The event in a verified delivery, or WebhookRefused(MALFORMED) saying what is missing."""
    hooks = spec.webhooks
    if hooks is None:
        raise WebhookRefused(Refusal.NOT_CONFIGURED, f"{spec.name} declares no [webhooks]")
    document, problem = parse.read_json(delivery.body)
    size = 0
    if problem is None:
        try:  # what the audit log can hold: no NaN, not nested past reason
            size = len(canonical_json(document).encode("utf-8"))
        except (InvalidInput, RecursionError):
            problem = "the event is not plain JSON"
    if problem is not None:
        raise WebhookRefused(Refusal.MALFORMED, f"the event is unreadable: {problem}")
    event_id = _text(find(document, hooks.event_id))
    if event_id is None and hooks.signing == "standard":
        event_id = delivery.delivery_id  # signed too, and stable across the sender's retries
    if event_id is None:
        raise WebhookRefused(Refusal.MALFORMED, f"the event has no id at `{hooks.event_id}`")
    job_id, problem = parse.job_id_at(document, hooks.job_id)
    if job_id is None:
        raise WebhookRefused(Refusal.MALFORMED, f"the event is unreadable: {problem}")
    word = _text(find(document, hooks.state))
    if word is None:
        raise WebhookRefused(Refusal.MALFORMED, f"the event has no state at `{hooks.state}`")
    _, remote_status = parse.remote_status(spec, word)
    return Event(
        event_id=event_id,
        delivery_id=delivery.delivery_id,
        job_id=job_id,
        remote_state=word,
        remote_status=remote_status,
        provider_updated_at=_text(find(document, updated_at_path(spec))),
        document=document,
        size=size,
    )


def updated_at_path(spec: ProviderSpec) -> str:
    """Where the provider's timestamp is: `updated_at` in [webhooks], else beside the state."""
    if spec.webhooks and spec.webhooks.updated_at:
        return spec.webhooks.updated_at
    state = spec.webhooks.state if spec.webhooks else "state"
    parent, dot, _ = state.rpartition(".")
    return f"{parent}{dot}updated_at"


def _text(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip() or len(value) > _MAX_TEXT:
        return None
    return value if value.isprintable() else None
