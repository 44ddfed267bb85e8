"""A call in flight is "in flight since T (owner W)", never "interrupted by a crash"
(issue 31); a crash is said only once the lease lapsed with the call unsettled. A real create
call held open by the simulator over loopback HTTP, a real ledger and the real worker; the
words are read as `status --json`, `explain` and the agents' `get_job` read them."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from jobtrail.core.model import Operation
from jobtrail.presentation.views import operation_view
from jobtrail.services.story import read_story

from harness import Harness, harness, tick
from waits import until_true_async


def _patient(doc: dict[str, Any]) -> None:
    doc["timeout"] = "60s"  # the call stays open until the test stops it


@pytest.fixture
async def patient(
    store_kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Harness]:
    async with harness(tmp_path, monkeypatch=monkeypatch, kind=store_kind, edit=_patient) as h:
        yield h


async def _words(rig: Harness, op: Operation) -> tuple[str, str, str]:
    """What `status --json` says next, the `next:` line of `explain`, and the line of its
    timeline that tells the create call."""
    ledger = rig.rt.ledger
    op = await ledger.get(op.operation_id)
    story = await read_story(ledger, op)
    status = operation_view(op, story.now, attempts=story.attempts).next_step
    lines = story.text().splitlines()
    (told,) = [line for line in lines if line.startswith("  next:")]
    (sent,) = [line for line in lines if "  create sent (" in line]
    return status, told.removeprefix("  next:").strip(), sent


async def test_a_call_in_flight_is_in_flight_and_a_lapsed_lease_is_a_crash(
    patient: Harness,
) -> None:
    """While the create call waits for its answer, every surface says it is in flight since
    its recorded start, with its owner; once the worker is gone and its lease lapsed, the
    same record reads as a call interrupted by a crash."""
    rig = patient
    op = await rig.submit({"account": "a", "_sim": {"delay_create": 600}})
    round_ = asyncio.create_task(tick(rig.rt, rig.clock))

    async def sent() -> bool:
        return (await rig.op(op)).inflight_attempt is not None and bool(rig.jobs_for(op))

    try:
        await until_true_async(sent, 30, "the create call is sent and held open")
        (attempt,) = await rig.rt.ledger.store.attempts(op.operation_id)
        status, told, line = await _words(rig, op)
        assert status == told
        assert told.startswith(f"the create call {attempt.attempt_id} is in flight since "), told
        assert told.endswith("(owner worker-1)"), told
        assert "crash" not in told
        assert line.endswith(": in flight, no answer yet (owner worker-1)"), line
    finally:
        round_.cancel()  # the worker dies mid-call: no outcome is recorded
        with contextlib.suppress(asyncio.CancelledError):
            await round_
    held = await rig.op(op)
    assert held.inflight_attempt is not None and held.lease_expires_at is not None
    rig.clock.advance((held.lease_expires_at - rig.clock.now()).total_seconds() + 1)
    status, told, line = await _words(rig, op)
    assert status == told
    assert told.startswith(f"settle the create call {attempt.attempt_id}, sent "), told
    assert "interrupted by a crash: the lease of worker-1 lapsed at " in told
    assert line.endswith("its owner's lease has lapsed: interrupted"), line
