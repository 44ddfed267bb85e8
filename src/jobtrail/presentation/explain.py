"""The readable explanation of an operation (what we asked, which remote job, what we
observed, what we did: `explain`) and the escalation bundle a person is handed when
automation stopped."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from jobtrail.core.model import Attempt, Observation, Operation, ProviderKind, Transition
from jobtrail.core.nextstep import deadlines_shown, driver, other_jobs_text
from jobtrail.core.notices import escalation_summary
from jobtrail.core.order import cancel_order
from jobtrail.core.states import Evidence, State
from jobtrail.core.words import iso, progress_text, when
from jobtrail.presentation.facts import fact_lines
from jobtrail.presentation.text import shown
from jobtrail.presentation.views import attempt_json, operation_view, timeline, transition_json


# C901: one section per part of the story, in the order explain prints them
def explain_text(  # noqa: C901
    op: Operation,
    history: list[Transition],
    attempts: list[Attempt],
    observations: list[Observation],
    now: datetime,
    *,
    body: Any = None,
    missing: str | None = None,
) -> str:
    """`body` is the request body as it may be shown (redacted by the caller); `missing`
    says that the operation's code provider is not available where this is told."""
    view = operation_view(op, now, attempts=attempts, observations=observations)
    seen = ""
    if op.remote_state:
        seen = f" — last seen {op.remote_state}"
        if op.progress is not None:
            seen += f", progress {progress_text(op.progress)}"
    lines = [
        f"Operation {op.operation_id} — {op.state}",
        f"  asked:      {_asked(op)}",
        f"              fingerprint {op.fingerprint}, token {op.idempotency_token}",
        f"              trace {op.trace_id}",
    ]
    if body is not None:
        lines.append(f"  body:       {_body_line(body)}")
    lines += [
        f"  remote job: {op.remote_job_id or 'none known'}{seen}",
        f"  deadlines:  {_deadlines_line(op, now)}",
        f"  next:       {view.next_step}",
    ]
    if op.provider_kind is ProviderKind.CODE:
        lines.append(f"  provider:   {driver(op)}" + (f" — {missing}" if missing else ""))
    if op.conflicting_job_ids:
        lines.append(
            f"  conflict:   provider tied this operation to {', '.join(op.conflicting_job_ids)}"
        )
    if op.refused_reads and _stopped_unreadable(op, history):
        lines.append(
            f"  unreadable: the provider's status answers were unreadable (no state could be "
            f"read from them): {op.refused_reads} in a row since {iso(op.refused_since)}"
        )
    elif op.refused_reads and op.state is State.NEEDS_HUMAN:
        lines.append(
            f"  refused:    {op.refused_reads} status reads in a row since {iso(op.refused_since)}"
        )
    elif op.refused_reads:
        lines.append(
            f"  not read:   {op.refused_reads} status reads in a row refused or unreadable "
            f"since {iso(op.refused_since)}"
        )
    if op.cancel_intent:
        ci = op.cancel_intent
        lines.append(
            f"  cancel:     asked by {ci.actor} ({ci.reason}); expected: {ci.expected_effect}"
        )
        if (order := cancel_order(op, history, attempts, observations)) is not None:
            lines.append(f"              {order}")
    lines += fact_lines(op, history)  # reconciled by which tier, remote deadline, usage
    if op.result:
        lines.append(f"  result:     {_result_line(op)}")
    if view.failure_reason is not None:
        lines.append(f"  why:        the provider said {view.failure_reason}")
    if (others := other_jobs_text(op)) is not None:
        lines.append(f"  other jobs: {others}")
    lines.append("")
    lines.append("Timeline")
    for at, text in timeline(op, history, attempts, observations, now):
        lines.append(f"  {at.strftime('%Y-%m-%d %H:%M:%S')}  {text}")
    # each entry is one line of ours: a provider's line break or escape inside it is shown
    return "\n".join(shown(line) for line in lines)


def _deadlines_line(op: Operation, now: datetime) -> str:
    shown = deadlines_shown(op)
    if not shown:
        return "none in force (the operation ended)"
    return "; ".join(f"{name} {when(at, now)}" for name, at in shown)


def _target(op: Operation) -> str:
    """Where the create went, without the provider's name the target starts with."""
    return op.request.target.removeprefix(f"{op.provider}:").removeprefix(f"{op.request.method} ")


def _asked(op: Operation) -> str:
    """Who asked whom for what, as a sentence: "alice asked simulator for POST URL/v1/reports
    (key feb-report), authorized by bob: February report"."""
    request = op.request
    # the target reads "PROVIDER:METHOD BASE_URLPATH" for provider files; say it once
    what = request.target.removeprefix(f"{op.provider}:")
    if what == request.target:
        what = f"{request.method} {request.target}"
    text = f"{op.actor} asked {op.provider} for {what}"
    if op.key != op.operation_id:
        text += f" (key {op.key})"
    if op.authorized_by:
        text += f", authorized by {op.authorized_by}"
    return text + (f": {op.reason}" if op.reason else "")


_BODY_SHOWN = 400  # characters of the request body in `explain`; --json has all of it


def _body_line(body: Any) -> str:
    text = json.dumps(body, ensure_ascii=False, separators=(", ", ": "))
    if len(text) > _BODY_SHOWN:
        return f"{text[:_BODY_SHOWN]}… ({len(text)} characters; --json shows all)"
    return text


def _result_line(op: Operation) -> str:
    result = op.result
    assert result is not None
    parts = ["valid" if result.valid else "INVALID"]
    if result.partial:
        parts.append(f"partial (what the job finished before it ended {op.state})")
    if result.size is not None:
        parts.append(f"{result.size} bytes")
    if result.records is not None:
        parts.append(f"{result.records} records")
    if result.items:
        items = result.items
        parts.append(f"items: {items.succeeded} succeeded, {items.failed} failed")
    if result.problems:
        parts.append("problems: " + "; ".join(result.problems))
    return ", ".join(parts)


def escalation_bundle(
    op: Operation,
    history: list[Transition],
    attempts: list[Attempt],
    now: datetime,
) -> dict[str, Any]:
    """Everything a person or the provider's support needs to see the real sequence."""
    return {
        "operation_id": op.operation_id,
        "state": op.state.value,
        "provider": op.provider,
        "remote_job_id": op.remote_job_id,
        "conflicting_job_ids": list(op.conflicting_job_ids),
        "trace_id": op.trace_id,
        "idempotency_token": op.idempotency_token,
        "request": {
            "method": op.request.method,
            # the provider is named once, above: its target reads "NAME:METHOD URL"
            "target": _target(op),
            "fingerprint": op.fingerprint,
        },
        "asked_by": op.actor,
        "authorized_by": op.authorized_by,
        "cancel_intent": operation_view(op, now).cancel_intent,
        "deadlines": {
            "create": iso(op.create_deadline),
            "result": iso(op.result_deadline),
            "cancel": iso(op.cancel_deadline),
        },
        "provider_request_ids": [a.provider_request_id for a in attempts if a.provider_request_id],
        "request_history": [attempt_json(a) for a in attempts],
        "transitions": [transition_json(t) for t in history],
        "summary": _escalation_summary(op, history),
    }


def _stopped_unreadable(op: Operation, history: list[Transition]) -> bool:
    """Whether automation stopped on status answers that could not be read as a state."""
    stops = [t for t in history if t.to_state is State.NEEDS_HUMAN]
    return (
        op.state is State.NEEDS_HUMAN
        and bool(stops)
        and stops[-1].evidence is Evidence.READS_UNREADABLE
    )


def _escalation_summary(op: Operation, history: list[Transition]) -> str:
    """The summary (core/notices.py), given the evidence that last stopped automation."""
    stops = [t for t in history if t.to_state is State.NEEDS_HUMAN]
    return escalation_summary(op, stops[-1].evidence if stops else None)
