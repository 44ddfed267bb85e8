"""A provider that breaks its status contract, end to end: the simulator over loopback answers
status reads 200 with nothing readable as a state (no body, `{}`, JSON cut short, not JSON);
a real SQLite ledger and the real worker on a virtual clock must back off and
stop for a human after [poll] max_refused_reads such answers in a row, instead of polling
until the result deadline. An occasional unreadable answer, and a body cut short of its
Content-Length (a transport failure), do not stop anything."""

from __future__ import annotations

import asyncio
import itertools
from datetime import timedelta

import pytest

from jobtrail.agent.tools import AgentTools
from jobtrail.core.model import Attempt, AttemptKind, Operation
from jobtrail.core.states import Evidence, State
from jobtrail.presentation.explain import escalation_bundle, explain_text

from harness import Harness

# What a provider says and how it is scheduled: the same on every store (SQLite only).
pytestmark = pytest.mark.sqlite_only

S = State


async def run(rig: Harness) -> None:
    """The worker until idle; the bound only turns a regression into a failure, not a hang."""
    await asyncio.wait_for(rig.run(), timeout=120)


async def status_attempts(rig: Harness, op: Operation) -> list[Attempt]:
    attempts = await rig.rt.ledger.store.attempts(op.operation_id)
    return [a for a in attempts if a.kind is AttemptKind.STATUS]


@pytest.mark.parametrize("body", ["empty", "no_state", "cut", "not_json"])
async def test_unreadable_status_answers_end_in_needs_human(rig: Harness, body: str) -> None:
    """200 with nothing readable on every read: growing waits, then needs_human after five
    in a row, every answer kept, explain saying the status answers were unreadable."""
    faults = {"unreadable_status": {"body": body}}
    op = await rig.submit({"account": "a", "_sim": faults}, result_deadline=timedelta(hours=24))
    await run(rig)
    op = await rig.op(op)
    assert op.state is S.NEEDS_HUMAN and op.refused_reads == 5
    reads = await status_attempts(rig, op)
    assert len(reads) == 5 == rig.sim.state.counts["status"]
    assert {a.http_status for a in reads} == {200} and {a.outcome for a in reads} == {"ambiguous"}
    assert all("body" in a.detail and a.detail["error"].startswith("the status") for a in reads)
    times = [a.started_at for a in reads]
    waits = [(b - a).total_seconds() for a, b in itertools.pairwise(times)]
    assert waits == sorted(waits) and waits[-1] > 4 * waits[0]
    history = await rig.history(op)
    (stopped,) = [t for t in history if t.to_state is S.NEEDS_HUMAN]
    assert stopped.evidence is Evidence.READS_UNREADABLE
    assert stopped.cause == f"status_unreadable:{reads[-1].attempt_id}"
    assert (stopped.at - op.created_at) < timedelta(minutes=10)  # not the 24 h deadline
    attempts = await rig.rt.ledger.store.attempts(op.operation_id)
    text = explain_text(op, history, attempts, [], op.created_at)
    assert "the provider's status answers were unreadable" in text
    assert "5 in a row" in text and "-> ambiguous HTTP 200: the status answer" in text
    told = await AgentTools(rig.rt.ledger, worker_running=False).explain_job(
        op.operation_id, actor="cli:tester"
    )
    assert "the provider's status answers were unreadable" in told.explanation
    bundle = escalation_bundle(op, history, attempts, op.created_at)
    assert "nothing readable as a state" in bundle["summary"]
    assert len([r for r in bundle["request_history"] if r["kind"] == "status"]) == 5
    assert await rig.rt.ledger.store.next_due() is None  # nothing left to spin on


async def test_an_occasional_unreadable_answer_does_not_halt(rig: Harness) -> None:
    """Every other read unreadable (more of them than the limit in all, never five in a
    row): each readable answer starts the count again and the job is followed to success."""
    faults = {"unreadable_status": {"body": "cut", "every": 2}, "duration_polls": 8}
    op = await rig.submit({"account": "a", "_sim": faults})
    await run(rig)
    op = await rig.op(op)
    assert op.state is S.SUCCEEDED and op.refused_reads == 0
    bad = [a for a in await status_attempts(rig, op) if a.outcome == "ambiguous"]
    assert len(bad) >= 6  # more unreadable answers than [poll] max_refused_reads


async def test_a_body_cut_short_of_its_content_length_stays_transient(rig: Harness) -> None:
    """A body shorter than its Content-Length is a broken call, not an answer: it is retried
    until the result deadline (result_timed_out), never counted toward needs_human."""
    faults = {"unreadable_status": {"body": "short"}}
    op = await rig.submit({"account": "a", "_sim": faults}, result_deadline=timedelta(minutes=10))
    await run(rig)
    op = await rig.op(op)
    assert op.state is S.RESULT_TIMED_OUT and op.refused_reads == 0
    reads = await status_attempts(rig, op)
    assert len(reads) > 5 and all(a.http_status is None for a in reads)
