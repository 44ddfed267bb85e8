"""`explain` states the order of a cancel and the job's end only as the record holds it
(issue 31): a job first seen ended after the cancel was recorded may have finished before
it, so without the provider's own end time the order is "unknown"; with it, the order is
read from that time. Real simulator over loopback HTTP, real ledger, real worker; the
simulator reads the worker's virtual clock, so its `updated_at` is comparable."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from jobtrail.core.states import State
from jobtrail.services.story import read_story

from harness import Harness, harness


def _no_end_time(doc: dict[str, Any]) -> None:
    """A provider whose status answer carries no time of its own (as Ray's, here)."""
    doc["status"]["updated_at"] = "finished_when"


@pytest.fixture
async def timed(
    store_kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Harness]:
    async with harness(tmp_path, monkeypatch=monkeypatch, kind=store_kind, shared_clock=True) as h:
        yield h


@pytest.fixture
async def untimed(
    store_kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Harness]:
    async with harness(
        tmp_path, monkeypatch=monkeypatch, kind=store_kind, shared_clock=True, edit=_no_end_time
    ) as h:
        yield h


async def _told(rig: Harness, operation_id: str) -> str:
    op = await rig.rt.ledger.get(operation_id)
    return (await read_story(rig.rt.ledger, op)).text()


async def test_a_job_seen_ended_after_the_cancel_without_its_end_time_is_in_unknown_order(
    untimed: Harness,
) -> None:
    """The job ends while the cancel is on its way and the provider gives no end time: the
    order is unknown, never "completed after the cancel request"."""
    rig = untimed
    op = await rig.submit({"account": "a", "_sim": {"cancel": "race", "duration_polls": 50}})
    await rig.until(op, State.OBSERVING)
    await rig.rt.ledger.cancel(op.operation_id, actor="alice", reason="not needed")
    await rig.run()
    assert (await rig.op(op)).state is State.SUCCEEDED
    told = await _told(rig, op.operation_id)
    assert "completed after the cancel" not in told
    assert (
        "succeeded, not cancelled: the job ended succeeded; whether it finished before the "
        "cancel reached the provider is unknown" in told
    ), told


async def test_the_providers_end_time_before_the_cancel_orders_them(timed: Harness) -> None:
    """The provider ended the job (its own time says when) before the cancel was recorded,
    and jobtrail saw it ended only afterwards: explain says it finished before the cancel."""
    rig = timed
    op = await rig.submit({"account": "a", "_sim": {"duration_seconds": 30}})
    await rig.until(op, State.OBSERVING)
    (job,) = rig.jobs_for(op)
    rig.clock.advance(31)
    rig.sim.state.advance_job(job, rig.clock.now().timestamp(), read=False)  # the job ends
    assert job.state == "succeeded"
    ended_at = job.updated_at
    rig.clock.advance(4)  # 4 s later, jobtrail not having looked, a person cancels
    await rig.rt.ledger.cancel(op.operation_id, actor="alice", reason="not needed")
    await rig.run()
    assert (await rig.op(op)).state is State.SUCCEEDED
    told = await _told(rig, op.operation_id)
    assert "completed after the cancel" not in told
    assert (
        f"succeeded, not cancelled: the job ended succeeded at {ended_at} by the provider's "
        "own clock, before the cancel was recorded" in told
    ), told


async def test_the_providers_end_time_after_the_acknowledgement_orders_them(
    timed: Harness,
) -> None:
    """The provider acknowledged the cancel and stamped the job's end later: explain says
    it ended after the acknowledgement, by the provider's own clock."""
    rig = timed
    op = await rig.submit({"account": "a", "_sim": {"cancel": "race", "duration_polls": 50}})
    await rig.until(op, State.OBSERVING)
    await rig.rt.ledger.cancel(op.operation_id, actor="alice", reason="not needed")
    await rig.run()
    assert (await rig.op(op)).state is State.SUCCEEDED
    told = await _told(rig, op.operation_id)
    assert "after the provider acknowledged the cancel" in told, told
