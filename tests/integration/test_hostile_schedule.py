"""Schedules a provider cannot break, end to end: the simulator over loopback sends hostile
Retry-After hints and refuses status reads; a real SQLite ledger and the real
worker on a virtual clock must wake at the deadline, keep the [poll] floor, back off, and
stop for a human instead of spinning."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from jobtrail.core.model import Attempt, AttemptKind, Operation
from jobtrail.core.states import Evidence, State
from jobtrail.presentation.explain import escalation_bundle, explain_text

from harness import Harness, harness

# What a provider says and how it is scheduled: the same on every store (SQLite only).
pytestmark = pytest.mark.sqlite_only

S = State


async def run(rig: Harness) -> None:
    """The worker until idle; the bound only turns a regression into a failure, not a hang
    (on a virtual clock a year-long wait is a loop of idle wake-ups)."""
    await asyncio.wait_for(rig.run(), timeout=120)


def with_poll(**keys: Any) -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        doc["poll"] = doc.get("poll", {}) | keys

    return edit


async def status_attempts(rig: Harness, op: Operation) -> list[Attempt]:
    attempts = await rig.rt.ledger.store.attempts(op.operation_id)
    return [a for a in attempts if a.kind is AttemptKind.STATUS]


def gaps(attempts: list[Attempt]) -> list[float]:
    times = [a.started_at for a in attempts]
    return [(b - a).total_seconds() for a, b in itertools.pairwise(times)]


@pytest.mark.parametrize("hint", ["far", "huge", "date_9999"])
async def test_a_far_retry_after_cannot_push_a_poll_past_the_result_deadline(
    rig: Harness, hint: str
) -> None:
    """The worker wakes at the result deadline, not at the hint: result_timed_out on time."""
    body = {"account": "a", "_sim": {"never_finish": True, "status_hint": {"value": hint}}}
    op = await rig.submit(body, result_deadline=timedelta(seconds=30))
    await run(rig)
    op = await rig.op(op)
    assert op.state is S.RESULT_TIMED_OUT
    (last,) = [t for t in await rig.history(op) if t.to_state is S.RESULT_TIMED_OUT]
    assert abs((last.at - op.result_deadline).total_seconds()) < 1
    assert len(await status_attempts(rig, op)) == 1


async def test_a_far_retry_after_cannot_push_a_poll_past_the_cancel_deadline(
    rig: Harness,
) -> None:
    """While cancelling, the cancel deadline bounds the wait: cancellation_unconfirmed on time."""
    faults = {"never_finish": True, "cancel": "ignore", "status_hint": {"value": "far"}}
    op = await rig.submit({"account": "a", "_sim": faults}, cancel_deadline=timedelta(seconds=20))
    await rig.until(op, S.OBSERVING)
    await rig.rt.ledger.cancel(op.operation_id, actor="alice", reason="not needed")
    await run(rig)
    op = await rig.op(op)
    assert op.state is S.CANCELLATION_UNCONFIRMED and op.cancel_deadline is not None
    (last,) = [t for t in await rig.history(op) if t.to_state is S.CANCELLATION_UNCONFIRMED]
    assert abs((last.at - op.cancel_deadline).total_seconds()) < 1


async def test_retry_after_zero_is_held_to_the_poll_floor(rig: Harness) -> None:
    """`Retry-After: 0` on every running status answer: polls stay [poll] min (1 s) apart."""
    faults = {"never_finish": True, "status_hint": {"value": "zero", "times": 200}}
    op = await rig.submit({"account": "a", "_sim": faults}, result_deadline=timedelta(seconds=40))
    await run(rig)
    op = await rig.op(op)
    assert op.state is S.RESULT_TIMED_OUT
    calls = rig.sim.state.counts["status"]
    assert 2 <= calls <= 40 / 1 + 2
    # Unchanged reads fold into observation runs (first seen, last seen, count): on the
    # virtual clock, n reads of a run span at least n - 1 floors.
    runs = [ob for ob in await rig.rt.ledger.store.observations(op.operation_id)]
    runs = [ob for ob in runs if ob.source == "status"]
    assert sum(ob.seen_count for ob in runs) == calls
    for ob in runs:
        span = (ob.seen_last - ob.observed_at).total_seconds()
        assert span >= (ob.seen_count - 1) * 1.0 - 1e-6, (ob.seen_count, span)


@pytest.mark.parametrize("hint", ["negative", "garbage"])
async def test_unreadable_retry_after_falls_back_to_backoff(rig: Harness, hint: str) -> None:
    """A hint that is not a delay or a date is ignored; the job is still followed to the end."""
    op = await rig.submit({"account": "a", "_sim": {"status_hint": {"value": hint}}})
    await run(rig)
    assert (await rig.op(op)).state is S.SUCCEEDED


async def test_refused_status_reads_back_off_and_end_in_needs_human(rig: Harness) -> None:
    """400 on every status read: growing waits, then needs_human with every answer kept."""
    op = await rig.submit({"account": "a", "_sim": {"refuse_status": {"status": 400}}})
    await run(rig)
    op = await rig.op(op)
    assert op.state is S.NEEDS_HUMAN and op.refused_reads == 5
    reads = await status_attempts(rig, op)
    assert len(reads) == 5 and {a.http_status for a in reads} == {400}
    assert all(a.detail["body"]["error"] == "refused" for a in reads)
    waits = gaps(reads)
    assert waits == sorted(waits) and waits[-1] > 4 * waits[0]
    (stopped,) = [t for t in await rig.history(op) if t.to_state is S.NEEDS_HUMAN]
    assert stopped.evidence is Evidence.READS_REFUSED
    assert stopped.cause == f"status_refused:{reads[-1].attempt_id}"
    bundle = escalation_bundle(
        op,
        await rig.history(op),
        await rig.rt.ledger.store.attempts(op.operation_id),
        op.created_at,
    )
    assert "refused 5 status reads" in bundle["summary"]
    text = explain_text(op, await rig.history(op), [], [], op.created_at)
    assert "refused:    5 status reads in a row" in text
    assert await rig.rt.ledger.store.next_due() is None  # nothing left to spin on


async def test_a_404_right_after_create_is_tolerated(tmp_path: Path, monkeypatch: Any) -> None:
    """A provider slow to show a new job (404 on the first reads) is followed to success, even
    when max_refused_reads is lower than the number of 404s."""
    edit = with_poll(max_refused_reads=2, not_found_grace="30s")
    async with harness(tmp_path, edit=edit, monkeypatch=monkeypatch) as rig:
        faults = {"refuse_status": {"status": 404, "times": 3}}
        op = await rig.submit({"account": "a", "_sim": faults})
        await run(rig)
        op = await rig.op(op)
        assert op.state is S.SUCCEEDED
        assert [a.http_status for a in await status_attempts(rig, op)][:3] == [404, 404, 404]


async def test_a_job_that_stays_404_ends_in_needs_human(tmp_path: Path, monkeypatch: Any) -> None:
    """Past the grace window, 404s count: a job that never shows up stops for a human."""
    edit = with_poll(max_refused_reads=3, not_found_grace="20s")
    async with harness(tmp_path, edit=edit, monkeypatch=monkeypatch) as rig:
        op = await rig.submit({"account": "a", "_sim": {"refuse_status": {"status": 404}}})
        await run(rig)
        op = await rig.op(op)
        assert op.state is S.NEEDS_HUMAN
        reads = await status_attempts(rig, op)
        assert op.refused_since is not None
        counted = [a for a in reads if (a.started_at - op.refused_since).total_seconds() >= 20]
        assert len(counted) == 3 and len(reads) <= 3 + 20 / 1


async def test_server_errors_back_off_until_the_deadline(rig: Harness) -> None:
    """5xx on every status read: capped exponential backoff, result_timed_out, no needs_human."""
    faults = {"status_error": 10_000}
    op = await rig.submit({"account": "a", "_sim": faults}, result_deadline=timedelta(minutes=10))
    await run(rig)
    op = await rig.op(op)
    assert op.state is S.RESULT_TIMED_OUT
    waits = gaps(await status_attempts(rig, op))
    assert waits[3] > 4 * waits[0] and max(waits) <= 60 + 1e-6
    assert len(waits) + 1 <= 20
