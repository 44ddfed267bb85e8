"""A person adopts a job that has already finished, past the result deadline (issue 31): the
adoption's status read is the operation's terminal observation, so the job is collected,
never `result_timed_out` with "the remote job may still be running"; and once it succeeded,
its story says the lost create answer was resolved by that person, not "not resolved". The
simulator over loopback HTTP, a real ledger, the real worker, the services every surface
calls."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from jobtrail.core.states import State
from jobtrail.presentation.views import operation_view
from jobtrail.services.decisions import resolve
from jobtrail.services.story import read_story

from harness import Harness, harness


def _blind(doc: dict[str, Any]) -> None:
    """The simulator's file without any way to find a job whose create answer was lost."""
    del doc["reconcile"]


@pytest.fixture
async def blind(
    store_kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Harness]:
    async with harness(tmp_path, monkeypatch=monkeypatch, kind=store_kind, edit=_blind) as h:
        yield h


async def test_a_finished_job_adopted_past_the_result_deadline_is_collected(
    blind: Harness,
) -> None:
    """The job the provider made (its create answer lost) ends while the operation waits for
    a person; adopted after the result deadline, it is collected and succeeds, and no
    surface says it may still run or that the lost answer was not resolved."""
    rig = blind
    body = {"account": "a", "_sim": {"drop_create_answer": True, "duration_polls": 1}}
    op = await rig.submit(body)
    await rig.run()
    assert (await rig.op(op)).state is State.NEEDS_HUMAN
    (job,) = rig.jobs_for(op)
    rig.clock.advance(timedelta(hours=2).total_seconds())  # past the 1 h result deadline
    ledger = rig.rt.ledger
    adopted = await resolve(
        ledger,
        rig.rt.providers,
        op.operation_id,
        "adopt",
        actor="alice",
        reason="support",
        job_id=job.job_id,
    )
    assert adopted.op.remote_state == "succeeded"  # the adoption's read saw it ended
    await rig.run()
    done = await rig.op(op)
    assert done.state is State.SUCCEEDED, done.state
    assert State.RESULT_TIMED_OUT not in await rig.path(op)
    story = await read_story(ledger, done)
    told = story.text()
    assert "not resolved" not in told and "may still" not in told, told
    assert f"resolved by a person: alice adopted job {job.job_id} at " in told, told
    shown = operation_view(done, story.now, attempts=story.attempts)
    assert shown.remote_may_still_run is False
