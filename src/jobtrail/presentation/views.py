"""How operations are shown to people and agents: one JSON shape for every surface, and
the readable explanation (what we asked, which remote job, what we observed, what we did)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime
from typing import Any

from jobtrail.core import outcomes as o
from jobtrail.core.allows import cancellability
from jobtrail.core.failure import failure_reason, provider_said
from jobtrail.core.model import Attempt, Observation, Operation, ProviderKind, Transition
from jobtrail.core.nextstep import (
    deadlines_shown,
    driver,
    needs_person,
    next_step,
    other_jobs,
    other_jobs_text,
)
from jobtrail.core.states import EVIDENCE_MEANING, REMOTE_MAY_RUN, Evidence, State
from jobtrail.core.words import iso, progress_text, when
from jobtrail.presentation.facts import fact_lines


def shown(value: object) -> str:
    """`value` as text a terminal cannot act on. A provider's words reach people's screens
    (states, progress, error messages, request ids), and a terminal obeys escape sequences
    in them: clearing the screen, hiding text, OSC 8 links, a carriage return that
    overwrites a line, a right-to-left override that reorders it. Every character that is
    not printable (C0 and C1 controls, DEL, bidi and other format characters, line
    separators) is shown as a visible escape instead: `\\x1b`, `\\u202e`."""
    text = value if isinstance(value, str) else str(value)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escaped(c) for c in text)


def shown_lines(text: str) -> str:
    """`shown` for text whose line breaks are ours: each line is neutralized on its own."""
    return "\n".join(shown(line) for line in text.split("\n"))


def _escaped(c: str) -> str:
    code = ord(c)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def json_text(document: Any) -> str:
    """Exact JSON for agents, safe on a terminal too: `json` escapes C0 controls; the other
    unprintable characters (DEL, C1 controls, bidi overrides) get `\\uXXXX` escapes as well,
    which JSON readers decode to the very same string."""
    text = json.dumps(document, indent=2, ensure_ascii=False, default=str)
    if text.replace("\n", "").isprintable():
        return text
    return "".join(c if c.isprintable() or c == "\n" else _json_escaped(c) for c in text)


def _json_escaped(c: str) -> str:
    code = ord(c)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def operation_json(
    op: Operation,
    now: datetime,
    *,
    attempts: Sequence[Attempt] | None = None,
    observations: Sequence[Observation] = (),
) -> dict[str, Any]:
    """The one JSON shape of an operation; with its `attempts` (and observations), also
    the provider's failure reason (`failure_reason`)."""
    cancel = cancellability(op)
    document = {
        "operation_id": op.operation_id,
        "key": op.key,
        "state": op.state.value,
        "ends_automation": op.state.ends_automation,
        "remote_job_id": op.remote_job_id,
        "remote_state": op.remote_state,
        "remote_status": op.remote_status.value if op.remote_status else None,
        "progress": op.progress,
        "provider": op.provider,
        "provider_kind": op.provider_kind.value,
        "provider_version": op.provider_version,
        "trace_id": op.trace_id,
        "idempotency_token": op.idempotency_token,
        "request_fingerprint": op.fingerprint,
        "actor": op.actor,
        "authorized_by": op.authorized_by,
        "reason": op.reason,
        "created_at": iso(op.created_at),
        "create_deadline": iso(op.create_deadline),
        "result_deadline": iso(op.result_deadline),
        "cancel_deadline": iso(op.cancel_deadline),
        "next_poll_at": iso(op.next_poll_at) if not op.lease_owner else None,
        "waiting_for": next_step(op, now),
        "cancel_intent": (
            asdict(op.cancel_intent) | {"requested_at": iso(op.cancel_intent.requested_at)}
            if op.cancel_intent
            else None
        ),
        "conflicting_job_ids": list(op.conflicting_job_ids),
        "refused_reads": op.refused_reads,
        "result": asdict(op.result) if op.result else None,
        "usage": op.usage,
        "remote_deadline_s": op.request.remote_deadline,
        "remote_may_still_run": op.state in REMOTE_MAY_RUN,
        "cancellable": cancel.allowed,
        "cancel": cancel.why,
        "needs_person": needs_person(op),
        "other_jobs": list(other_jobs(op)),
    }
    if attempts is not None:
        document["failure_reason"] = failure_reason(op, attempts, observations)
    return document


def transition_json(tr: Transition) -> dict[str, Any]:
    return {
        "seq": tr.seq,
        "at": iso(tr.at),
        "actor": tr.actor,
        "from": tr.from_state.value,
        "to": tr.to_state.value,
        "evidence": tr.evidence.value,
        "cause": tr.cause,
        "remote_job_id": tr.remote_job_id,
    }


def attempt_json(at: Attempt) -> dict[str, Any]:
    return {
        "attempt_id": at.attempt_id,
        "kind": at.kind.value,
        "actor": at.actor,
        "fence": at.fence,
        "started_at": iso(at.started_at),
        "finished_at": iso(at.finished_at),
        "outcome": at.outcome or "no outcome recorded (interrupted)",
        "http_status": at.http_status,
        "provider_request_id": at.provider_request_id,
        "request": at.request,
        "detail": at.detail,
    }


def timeline(
    op: Operation,
    history: list[Transition],
    attempts: list[Attempt],
    observations: list[Observation],
) -> list[tuple[datetime, str]]:
    """Events in time order; each observation run of status reads is one line."""
    events: list[tuple[datetime, int, str]] = [
        (
            op.created_at,
            0,
            f"submitted by {op.actor}"
            + (f", authorized by {op.authorized_by}" if op.authorized_by else "")
            + (f": {op.reason}" if op.reason else ""),
        )
    ]
    # The store folds consecutive reads of one remote state into one observation run.
    for run in (ob for ob in observations if ob.source == "status"):
        label = "status read" if run.seen_count == 1 else f"{run.seen_count} status reads"
        last = run.last_progress if run.last_seen_at is not None else run.progress
        progress = f", progress {progress_text(last)}" if last is not None else ""
        events.append((run.observed_at, 1, f"{label}: remote {run.remote_state}{progress}"))
    for at in attempts:
        if at.kind.value == "status" and at.outcome == o.Observed.word:
            continue  # its observation run tells what it saw
        events.append((at.started_at, 1, _attempt_line(at)))
    for ob in observations:
        if ob.source == "webhook":
            events.append((ob.observed_at, 1, f"webhook {ob.event_id}: remote {ob.remote_state}"))
    for tr in history:
        events.append(
            (
                tr.at,
                2,
                f"{tr.from_state} -> {tr.to_state} by {tr.actor} "
                f"({EVIDENCE_MEANING[tr.evidence]}; {tr.cause})",
            )
        )
    events.sort(key=lambda event: (event[0], event[1]))
    return [(at, text) for at, _, text in events]


def _attempt_line(at: Attempt) -> str:
    what = {
        "create": "create sent",
        "cancel": "cancel sent",
        "result": "result fetched",
        "reconcile": "lookup by client reference",
        "status": "status read",
    }[at.kind.value]
    detail = at.detail if isinstance(at.detail, dict) else {}
    # "nothing was sent" in the error: an attempt recorded before calls were marked unsent
    if detail.get("sent") is False or "nothing was sent" in str(detail.get("error", "")):
        what = f"{at.kind.value} not sent"
    if at.outcome is None:
        return f"{what} ({at.attempt_id}): no outcome recorded — the worker stopped mid-call"
    status = f" HTTP {at.http_status}" if at.http_status else ""
    request = f", provider request {at.provider_request_id}" if at.provider_request_id else ""
    reason = ""
    if isinstance(at.detail, dict) and at.detail.get("error"):
        reason = f": {at.detail['error']}"
    why = provider_said(at)
    if why:
        reason += f" (provider error {why})"
    items = at.detail.get("item_errors") if isinstance(at.detail, dict) else None
    if isinstance(items, dict) and isinstance(items.get("first"), list) and items["first"]:
        first = items["first"][0]
        said = ": ".join(str(first.get(k)) for k in ("code", "message") if first.get(k))
        reason += f"; {items.get('failed')} failed item(s), first {first.get('ref')}" + (
            f" ({said})" if said else ""
        )
    return f"{what} ({at.attempt_id}) -> {at.outcome}{status}{reason}{request}"


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
        f"  next:       {next_step(op, now)}",
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
        if op.state in (State.SUCCEEDED, State.FAILED, State.RESULT_COLLECTING):
            lines.append(
                "              the job completed after the cancel request: "
                f"it ended {op.state}, not cancelled"
            )
    lines += fact_lines(op, history)  # reconciled by which tier, remote deadline, usage
    if op.result:
        lines.append(f"  result:     {_result_line(op)}")
    if (why := failure_reason(op, attempts, observations)) is not None:
        lines.append(f"  why:        the provider said {why}")
    if (others := other_jobs_text(op)) is not None:
        lines.append(f"  other jobs: {others}")
    lines.append("")
    lines.append("Timeline")
    for at, text in timeline(op, history, attempts, observations):
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
        "cancel_intent": operation_json(op, now)["cancel_intent"],
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
    match op.state:
        case State.CANCELLATION_UNCONFIRMED:
            return (
                f"We asked {op.provider} to cancel job {op.remote_job_id} and saw no "
                "terminal state before the cancel deadline. The job may still be running."
            )
        case State.NEEDS_HUMAN if op.conflicting_job_ids:
            return (
                f"{op.provider} tied one idempotency token / client reference to several "
                f"jobs ({', '.join(op.conflicting_job_ids)}). Automation stopped; decide "
                "which job is ours."
            )
        case State.NEEDS_HUMAN if op.refused_reads and _stopped_unreadable(op, history):
            return (
                f"{op.provider} answered {op.refused_reads} status reads of job "
                f"{op.remote_job_id} in a row with nothing readable as a state (no body, no "
                "state field, JSON cut short or not JSON; the answers are in request_history). "
                "Automation stopped; check the job, then adopt it to resume polling or "
                "mark the operation failed."
            )
        case State.NEEDS_HUMAN if op.refused_reads:
            return (
                f"{op.provider} refused {op.refused_reads} status reads of job "
                f"{op.remote_job_id} in a row (the answers are in request_history). "
                "Automation stopped; check the job, then adopt it to resume polling or "
                "mark the operation failed."
            )
        case State.NEEDS_HUMAN:
            return "The create outcome could not be proven; decide whether a job exists."
        case State.RESULT_TIMED_OUT:
            return (
                f"Job {op.remote_job_id} did not finish before the result deadline; it "
                "may still be running."
            )
        case _:
            return f"Operation is {op.state}."
