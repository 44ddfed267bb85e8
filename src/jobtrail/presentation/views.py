"""How operations are shown to people and agents: one view of an operation
(`OperationView`) that the CLI prints as JSON, the dashboard shows and the agents' tools
return, the JSON of its transitions and attempts, and the timeline of what
happened. The readable explanation is in presentation/explain.py, terminal-safe text in
presentation/text.py."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from jobtrail.core import outcomes as o
from jobtrail.core.allows import cancellability
from jobtrail.core.failure import failure_reason, provider_said
from jobtrail.core.leases import lease_alive
from jobtrail.core.model import Attempt, Json, Observation, Operation, Transition
from jobtrail.core.nextstep import needs_person, next_step, other_jobs, remote_may_run
from jobtrail.core.proof import lookup_name
from jobtrail.core.states import EVIDENCE_MEANING
from jobtrail.core.words import iso, progress_text


@dataclass(frozen=True, kw_only=True)
class OperationView:
    """An operation as every surface shows it, built once by `operation_view` from the
    ledger's facts: the CLI prints it (as an `OperationRecord`), the dashboard shows its
    words and the agents' `JobView` is one. `next_step` is what jobtrail does next
    (core/nextstep.py), under that one name on every surface. No field here carries a
    credential, the idempotency token or the request headers."""

    operation_id: str
    key: str
    provider: str
    state: str
    ends_automation: bool
    remote_job_id: str | None
    remote_state: str | None
    progress: Json
    next_poll_at: str | None  # none while a worker holds it
    next_step: str
    needs_person: bool
    remote_may_still_run: bool
    cancellable: bool
    cancel_note: str  # why a cancel may (or may not) be asked for now
    failure_reason: str | None  # the provider's own words for a failure
    other_jobs: list[str]  # jobs the provider tied to it that jobtrail does not follow
    actor: str
    reason: str | None
    created_at: str | None
    result_deadline: str | None


@dataclass(frozen=True, kw_only=True)
class OperationRecord(OperationView):
    """The view with what a person holding the ledger sees too (its token, fingerprint,
    deadlines, cancel intent and result summary): what the CLI's `--json` prints."""

    remote_status: str | None
    provider_kind: str
    provider_version: str | None
    trace_id: str
    idempotency_token: str
    request_fingerprint: str
    authorized_by: str | None
    create_deadline: str | None
    cancel_deadline: str | None
    cancel_intent: dict[str, Any] | None
    conflicting_job_ids: list[str]
    refused_reads: int
    result: dict[str, Any] | None
    usage: dict[str, float] | None
    remote_deadline_s: float | None
    attempts_read: bool  # whether failure_reason was read: json() leaves it out if not

    def json(self) -> dict[str, Any]:
        document = asdict(self)
        if not document.pop("attempts_read"):
            del document["failure_reason"]
        return document


def operation_view(
    op: Operation,
    now: datetime,
    *,
    attempts: Sequence[Attempt] | None = None,
    observations: Sequence[Observation] = (),
) -> OperationRecord:
    """`op` as shown at `now`; with its `attempts` (and observations), the next step knows a
    call in flight and the view holds the provider's failure reason."""
    cancel = cancellability(op)
    intent = op.cancel_intent
    return OperationRecord(
        operation_id=op.operation_id,
        key=op.key,
        state=op.state.value,
        ends_automation=op.state.ends_automation,
        remote_job_id=op.remote_job_id,
        remote_state=op.remote_state,
        remote_status=op.remote_status.value if op.remote_status else None,
        progress=op.progress,
        provider=op.provider,
        provider_kind=op.provider_kind.value,
        provider_version=op.provider_version,
        trace_id=op.trace_id,
        idempotency_token=op.idempotency_token,
        request_fingerprint=op.fingerprint,
        actor=op.actor,
        authorized_by=op.authorized_by,
        reason=op.reason,
        created_at=iso(op.created_at),
        create_deadline=iso(op.create_deadline),
        result_deadline=iso(op.result_deadline),
        cancel_deadline=iso(op.cancel_deadline),
        next_poll_at=iso(op.next_poll_at) if not op.lease_owner else None,
        next_step=next_step(op, now, attempts or ()),
        cancel_intent=asdict(intent) | {"requested_at": iso(intent.requested_at)}
        if intent
        else None,
        conflicting_job_ids=list(op.conflicting_job_ids),
        refused_reads=op.refused_reads,
        result=asdict(op.result) if op.result else None,
        usage=op.usage,
        remote_deadline_s=op.request.remote_deadline,
        remote_may_still_run=remote_may_run(op),
        cancellable=cancel.allowed,
        cancel_note=cancel.why,
        needs_person=needs_person(op),
        other_jobs=list(other_jobs(op)),
        failure_reason=failure_reason(op, attempts, observations) if attempts is not None else None,
        attempts_read=attempts is not None,
    )


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
        "outcome": at.outcome or "no outcome recorded",
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
    now: datetime | None = None,
) -> list[tuple[datetime, str]]:
    """Events in time order; each observation run of status reads is one line. With `now`,
    a call still unsettled is told in flight or interrupted by its owner's lease."""
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
        events.append((at.started_at, 1, _attempt_line(op, at, now)))
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


def _attempt_line(op: Operation, at: Attempt, now: datetime | None) -> str:
    what = {
        "create": "create sent",
        "cancel": "cancel sent",
        "result": "result fetched",
        "reconcile": lookup_name(op, at.request),
        "status": "status read",
    }[at.kind.value]
    detail = at.detail if isinstance(at.detail, dict) else {}
    # "nothing was sent" in the error: an attempt recorded before calls were marked unsent
    if detail.get("sent") is False or "nothing was sent" in str(detail.get("error", "")):
        what = f"{at.kind.value} not sent"
    if at.outcome is None:
        return f"{what} ({at.attempt_id}): {_unsettled(op, at, now)}"
    status = f" HTTP {at.http_status}" if at.http_status else ""
    outcome: str = at.outcome
    if at.outcome == o.Found.word:  # what it found, never "found HTTP 404"
        outcome = found_text(detail)
        status = f" (answered HTTP {at.http_status})" if at.http_status else ""
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
    return f"{what} ({at.attempt_id}) -> {outcome}{status}{reason}{request}"


def _unsettled(op: Operation, at: Attempt, now: datetime | None) -> str:
    """An attempt whose outcome is not recorded, said from the record: in flight while its
    owner's lease holds, interrupted once it lapsed or once the call was settled without it
    (taken as sent, its answer unknown)."""
    if at.attempt_id != op.inflight_attempt:
        return "no outcome recorded: interrupted, settled as sent with its answer unknown"
    if now is not None and lease_alive(op, now):
        return f"in flight, no answer yet (owner {op.lease_owner})"
    if now is not None:
        return "no outcome recorded, and its owner's lease has lapsed: interrupted"
    return "no outcome recorded yet (next: says whether it is in flight)"


def found_text(detail: dict[str, Any]) -> str:
    """What a lookup found, as its attempt recorded it: "found no job", "found job X",
    "found jobs X, Y"; a record from before the ids were kept says it does not know."""
    scanned = detail.get("scanned")
    found = detail.get("found", scanned.get("found") if isinstance(scanned, dict) else None)
    if not isinstance(found, list):
        return "answered (what it found is not recorded)"
    if not found:
        return "found no job"
    return f"found job{'s' if len(found) > 1 else ''} {', '.join(str(i) for i in found)}"
