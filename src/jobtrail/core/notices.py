"""Which changes tell a person, and what the notice says (the outbox's events).

An operation that enters a state waiting for a person (`nextstep.PERSON_STATES`) raises one
notice, written in the same transaction as its transition (store/commit.py) and delivered
later by the notifier (services/notify.py). A census finding raises one through
`Ledger.raise_notice` with `census_notice`. The event id is derived from the transition it
announces, so the same transition can never raise two events, and every redelivery of an
event carries its id. The data never holds the request body, the idempotency token or any
header: what a person needs to find the case, and the words `explain` uses.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from jobtrail.core.model import Operation, Transition
from jobtrail.core.nextstep import PERSON_STATES, next_step, seen_ended
from jobtrail.core.schedule import Backoff
from jobtrail.core.states import Evidence, State

# The census' event type (an operation's is "operation.<state>", a person state).
CENSUS_FINDING = "census.finding"

# Delivery retries: about 2 s, 4 s, 8 s ... capped at 10 minutes, jittered; after
# MAX_TRIES failed rounds the notice is given up (recorded, never silently dropped).
DELIVERY_BACKOFF = Backoff(base=2.0, cap=600.0, factor=2.0, jitter=0.2)
MAX_TRIES = 25


@dataclass(frozen=True, kw_only=True)
class Notice:
    """One event of the outbox: its id (the Standard Webhooks `webhook-id`), type, moment
    and data; `operation_id` is None for an event about no one operation."""

    event_id: str
    type: str
    at: datetime
    operation_id: str | None
    data: Mapping[str, Any] = field(default_factory=dict)

    def document(self) -> dict[str, Any]:
        """The JSON body sent (the Standard Webhooks payload shape: type, timestamp, data)."""
        return {
            "id": self.event_id,
            "type": self.type,
            "timestamp": self.at.isoformat(),
            "data": dict(self.data),
        }


def event_id(*parts: str) -> str:
    digest = hashlib.sha256("\n".join(parts).encode()).hexdigest()
    return f"evt_{digest[:32]}"


def escalations(op: Operation, transitions: Iterable[Transition]) -> list[Notice]:
    """The notices `op`'s new `transitions` raise: one per entry into a person state."""
    return [
        escalation(op, tr)
        for tr in transitions
        if tr.to_state in PERSON_STATES and tr.from_state is not tr.to_state
    ]


def escalation(op: Operation, tr: Transition) -> Notice:
    """The notice of `op` entering `tr.to_state` (op: the record after the change)."""
    state = tr.to_state
    data = {
        "operation_id": op.operation_id,
        "key": op.key,
        "provider": op.provider,
        "remote_job_id": op.remote_job_id,
        "trace_id": op.trace_id,
        "state": state.value,
        "from_state": tr.from_state.value,
        "cause": tr.cause,
        "next_step": next_step(op, tr.at),
        "summary": escalation_summary(op, tr.evidence if state is State.NEEDS_HUMAN else None),
        "dashboard_path": f"/operations/{op.operation_id}",
    }
    return Notice(
        event_id=event_id(op.operation_id, state.value, tr.at.isoformat()),
        type=f"operation.{state.value}",
        at=tr.at,
        operation_id=op.operation_id,
        data=data,
    )


def census_notice(
    *, provider: str, remote_job_id: str, finding: str, at: datetime, summary: str, **more: Any
) -> Notice:
    """The notice of one census finding (a job at `provider` the ledger does not account
    for: `finding` names which kind). `more` adds JSON-safe fields (an operation id...)."""
    data = {
        "provider": provider,
        "remote_job_id": remote_job_id,
        "finding": finding,
        "summary": summary,
        **more,
    }
    op_id = more.get("operation_id")
    return Notice(
        event_id=event_id("census", provider, remote_job_id, finding),
        type=CENSUS_FINDING,
        at=at,
        operation_id=op_id if isinstance(op_id, str) else None,
        data=data,
    )


def escalation_summary(op: Operation, stop: Evidence | None) -> str:
    """The escalation bundle's summary of `op`; `stop` is the evidence of the transition
    that last stopped automation in needs_human, if known."""
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
        case State.NEEDS_HUMAN if op.refused_reads and stop is Evidence.READS_UNREADABLE:
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
        case State.RESULT_TIMED_OUT if seen_ended(op):
            return (
                f"The result deadline passed after job {op.remote_job_id} was seen ended "
                f"{op.remote_state}; its result was not collected."
            )
        case State.RESULT_TIMED_OUT:
            return (
                f"Job {op.remote_job_id} was not seen ended before the result deadline; it "
                "may still be running."
            )
        case State.RESULT_VALIDATION_FAILED:
            return (
                f"Job {op.remote_job_id} finished, but its result failed validation; decide "
                "whether to mark it failed, accept it as is or collect it again."
            )
        case _:
            return f"Operation is {op.state}."


def slack_text(notice: Notice, dashboard: str | None) -> str:
    """The Slack-compatible text form of `notice` (one message, mrkdwn)."""
    d = notice.data
    head = f"*jobtrail: {notice.type}*"
    lines = [head]
    if d.get("operation_id"):
        lines.append(f"operation `{d['operation_id']}` (key `{d.get('key')}`)")
    lines.append(f"provider {d.get('provider')}, remote job `{d.get('remote_job_id')}`")
    if d.get("trace_id"):
        lines.append(f"trace `{d['trace_id']}`")
    lines.append(str(d.get("summary", "")))
    if d.get("next_step"):
        lines.append(f"next: {d['next_step']}")
    if dashboard:
        lines.append(dashboard)
    return "\n".join(lines)


@dataclass(frozen=True, kw_only=True)
class Outboxed:
    """A notice as the outbox holds it: due for a delivery round at `due_at` (None once
    delivered or given up), claimed `claims` times, `tries` rounds failed so far."""

    notice: Notice
    due_at: datetime | None
    claims: int = 0
    tries: int = 0
    delivered_at: datetime | None = None
    gave_up_at: datetime | None = None
    last_error: str | None = None


@dataclass(frozen=True, kw_only=True)
class DeliveryAttempt:
    """One delivery of one notice to one endpoint (`endpoint`: its label, never its URL).
    `outcome`: delivered (2xx), refused (another answer) or unanswered (no answer)."""

    event_id: str
    endpoint: str
    at: datetime
    outcome: str
    http_status: int | None = None
    detail: str | None = None


def after_round(
    box: Outboxed, now: datetime, failed: str | None, retry_at: datetime | None
) -> Outboxed:
    """`box` after a delivery round at `now`: delivered when nothing `failed` (the first
    error, or None); else due again at `retry_at` (the latest Retry-After asked, if any,
    and never before the backoff), or given up after MAX_TRIES rounds."""
    if failed is None:
        return Outboxed(
            notice=box.notice, due_at=None, claims=box.claims, tries=box.tries,
            delivered_at=now,
        )  # fmt: skip
    tries = box.tries + 1
    if tries >= MAX_TRIES:
        return Outboxed(
            notice=box.notice, due_at=None, claims=box.claims, tries=tries, gave_up_at=now,
            last_error=failed,
        )  # fmt: skip
    return Outboxed(
        notice=box.notice, due_at=retry_at, claims=box.claims, tries=tries, last_error=failed
    )
