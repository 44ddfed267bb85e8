"""Records for the store contract tests: operations, changes, attempts, observations."""

from __future__ import annotations

import asyncio
import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from jobtrail.core.audit import AuditEntry
from jobtrail.core.ids import idempotency_token, operation_id, short_id, trace_id
from jobtrail.core.model import (
    Attempt,
    AttemptKind,
    CancelIntent,
    Capabilities,
    Idempotency,
    ItemCounts,
    JobRequest,
    Observation,
    Operation,
    ResultMode,
    ResultSummary,
    Transition,
)
from jobtrail.core.states import Evidence, RemoteStatus, State
from jobtrail.store import Change

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(seconds=30)
# A lease ends on the ledger's own clock (PostgreSQL's, or on SQLite the machine's boot
# clock), which no claimer's `now` moves: a test of a takeover takes a SHORT lease and waits
# for it to run out for real (`outlive`), then claims at any `now` past its expiry.
SHORT = timedelta(milliseconds=300)


async def outlive(lease: timedelta = SHORT) -> None:
    """Wait until a lease of `lease` taken before has ended on the ledger's clock."""
    await asyncio.sleep(lease.total_seconds() + 0.05)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def operation(n: int, *, created: datetime | None = None, **fields: Any) -> Operation:
    """Operation number `n`: ids sort by `created` (default: n seconds after T0)."""
    rand = random.Random(n)
    created = created or at(n)
    op = Operation(
        operation_id=operation_id(created, rand),
        key=f"key-{n}",
        provider="sim",
        provider_config={"name": "sim", "poll": {"initial": "2s"}},
        capabilities=Capabilities(),
        request=JobRequest(method="POST", target="sim:/v1/jobs", body={"n": n}),
        fingerprint=f"sha256:{n:064x}",
        idempotency_token=idempotency_token(rand),
        trace_id=trace_id(rand),
        actor="agent:test",
        authorized_by=None,
        reason=None,
        created_at=created,
        create_deadline=created + timedelta(minutes=5),
        cancel_timeout=timedelta(minutes=2),
        result_deadline=created + timedelta(hours=1),
        next_poll_at=created,
        updated_at=created,
    )
    return replace(op, **fields)


def rich_operation() -> Operation:
    """An operation with every optional field set, awkward values included."""
    base = operation(7)
    return replace(
        base,
        provider_config={"name": "sim", "states": {"done": "succeeded"}, "limits": [1, 2.5]},
        capabilities=Capabilities(
            idempotency=Idempotency.HEADER,
            same_token_retry=True,
            list_by_reference=True,
            status_by_client_id=True,
            cancel=True,
            result=ResultMode.ENDPOINT,
            webhooks=True,
        ),
        request=JobRequest(
            method="POST",
            target="sim:/v1/reports",
            body={
                "título": "Informe de febrero ✓",
                "emoji": "📊",
                "nested": {"list": [1, {"deep": [None, True, False, 0.5]}], "empty": {}},
                "quote": 'he said "hi"\n\ttab',
            },
            headers={"X-Tenant": "acme"},
        ),
        authorized_by="human:ana",
        reason="monthly close",
        state=State.CANCEL_REQUESTED,
        remote_job_id="job_123",
        remote_state="RUNNING",
        remote_status=RemoteStatus.RUNNING,
        progress={"percent": 40, "stage": "render"},
        status_url="https://sim.example/v1/jobs/job_123",
        candidate_job_id="job_122",
        conflicting_job_ids=("job_120", "job_121"),
        next_poll_at=at(100.5),
        poll_count=3,
        create_attempts=2,
        inflight_attempt="at_0001",
        cancel_intent=CancelIntent(
            actor="human:ana",
            reason="wrong month ñ",
            expected_effect="stop the job",
            requested_at=at(90.25),
            request_id="req_1",
        ),
        cancel_deadline=at(300),
        cancel_sent=True,
        inline_result="results/abc",
        result=ResultSummary(
            valid=False,
            content_type="text/csv",
            sha256="ab" * 32,
            size=1234,
            location="results/ab/abab",
            records=10,
            items=ItemCounts(total=10, succeeded=8, failed=2, failed_refs=("r3", "r7")),
            checks=("content_type", "sha256"),
            problems=("2 items failed",),
        ),
        updated_at=at(95.000001),
    )


def entry(op: Operation, kind: str, when: datetime | None = None, **data: Any) -> AuditEntry:
    return AuditEntry(
        at=when or op.updated_at or T0,
        operation_id=op.operation_id,
        kind=kind,
        actor="agent:test",
        data=data,
    )


def transition(op: Operation, to: State, when: datetime, evidence: Evidence) -> Transition:
    return Transition(
        operation_id=op.operation_id,
        at=when,
        actor="worker:a",
        from_state=op.state,
        to_state=to,
        evidence=evidence,
        cause=f"{op.state} -> {to}",
        remote_job_id=op.remote_job_id,
    )


def observation(
    op: Operation, when: datetime, event_id: str | None = None, state: str = "RUNNING"
) -> Observation:
    return Observation(
        operation_id=op.operation_id,
        source="webhook" if event_id else "status",
        observed_at=when,
        remote_state=state,
        remote_status=RemoteStatus.RUNNING,
        provider_updated_at="2025-03-01T12:00:00Z",
        progress={"percent": 10},
        ref=event_id,
        event_id=event_id,
    )


def attempt(
    op: Operation, when: datetime, n: int = 0, kind: AttemptKind = AttemptKind.STATUS
) -> Attempt:
    return Attempt(
        attempt_id=short_id("at_", random.Random(f"{op.operation_id}/{n}")),
        operation_id=op.operation_id,
        kind=kind,
        fence=op.fence,
        actor="worker:a",
        started_at=when,
        request={"method": "GET", "url": "https://sim.example/v1/jobs/job_123"},
    )


def finished(att: Attempt, when: datetime, status: int = 200) -> Attempt:
    return replace(
        att,
        finished_at=when,
        outcome="StatusObserved",
        http_status=status,
        provider_request_id="preq_1",
        detail={"retry_after": None},
    )


def step(
    op: Operation,
    when: datetime,
    *,
    fence: int | None = None,
    to: State | None = None,
    **fields: Any,
) -> Change:
    """A change moving `op` (as last read) on by one step at `when`, with its audit entry."""
    new = replace(op, updated_at=when, poll_count=op.poll_count + 1, **fields)
    transitions = ()
    if to is not None:
        new = replace(new, state=to)
        transitions = (transition(op, to, when, Evidence.CREATE_ACCEPTED),)
    return Change(
        operation=new,
        owner_fence=fence,
        transitions=transitions,
        audit=[entry(op, "step", when, poll=new.poll_count)],
    )
