"""An operation's record for people (`status`, `submit`, `cancel`, `resolve`, `extend`):
plain `label value` lines, and whether its code provider is installed here."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import click

from jobtrail.core.model import Operation, ProviderKind
from jobtrail.core.words import progress_text, relative
from jobtrail.presentation.text import shown


def not_installed_here(op: Operation) -> str | None:
    """providers.plugins' word, read only for a code provider's operation: the entry points
    it scans cost `status` more than the rest of its start-up."""
    if op.provider_kind is not ProviderKind.CODE:
        return None
    from jobtrail.providers.code.plugins import not_installed

    return not_installed(op)


def show(document: dict[str, Any]) -> None:
    """An operation's record as `label value` lines, never cut: plain text (rich is not
    loaded for `status`, whose start-up bench/startup.py measures)."""
    rows: list[tuple[str, str]] = []
    for field in (
        "operation_id",
        "state",
        "remote_job_id",
        "remote_state",
        "progress",
        "next_step",
        "failure_reason",
        "other_jobs",
        "provider",
        "provider_missing",
        "key",
        "trace_id",
        "idempotency_token",
        "request_fingerprint",
        "created_at",
        "result_deadline",
    ):
        value = document.get(field)
        if field == "progress" and value is not None:
            value = progress_text(value)
        if field in ("created_at", "result_deadline") and isinstance(value, str):
            at = datetime.fromisoformat(value.replace("Z", "+00:00"))
            value = f"{value} ({relative(at, datetime.now(UTC))})"
        if field == "other_jobs" and value:
            value = ", ".join(value)
        if value is not None and value != []:
            rows.append((field, value if isinstance(value, str) else json.dumps(value)))
    result = document.get("result")
    if result:
        valid = "valid" if result["valid"] else "invalid: " + "; ".join(result["problems"])
        rows.append(("result", valid))
    width = max(len(label) for label, _ in rows)
    click.echo("\n".join(f"{label.ljust(width)}  {shown(value)}" for label, value in rows))
