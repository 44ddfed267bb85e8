"""Deadlines pushed down to the provider, against the simulator's vendor modes: the result
deadline is written where the provider takes one (a header, a body field), rounded down to
what it accepts, as part of the recorded and fingerprinted request; the remote job then
stops by itself while jobtrail is away, and what it finished is still collected."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from jobtrail.core.states import State
from jobtrail.errors import KeyConflict
from vendor_rig import Rig, vendor_rig


def job_of(rig: Rig) -> object:
    (job,) = rig.h.sim.vendors.jobs[rig.mode].values()
    return job


async def test_replicate_gets_the_result_deadline_as_cancel_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The 30-minute result deadline goes out as `Cancel-After: 1800s`, recorded with the
    request (headers and fingerprint), and the prediction carries it as its deadline."""
    async with vendor_rig("replicate", "header", tmp_path, monkeypatch) as rig:
        op = await rig.submit()
        assert op.request.headers == {"Cancel-After": "1800s"}
        assert op.request.remote_deadline == 1800
        op = await rig.finish(op)
        assert op.state is State.SUCCEEDED, op
        job = job_of(rig)
        assert job.extra["cancel_after"] == "1800s"  # type: ignore[attr-defined]
        attempts = await rig.h.rt.ledger.store.attempts(op.operation_id)
        create = next(a for a in attempts if a.kind.value == "create")
        assert create.request["headers"]["Cancel-After"] == "1800s"


async def test_the_fingerprint_covers_the_deadline_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same key with the same body but another result deadline is another request
    (another Cancel-After): refused, never folded into the first operation."""
    async with vendor_rig("replicate", "print", tmp_path, monkeypatch) as rig:
        first = await rig.submit(key="otter")
        again = await rig.submit(key="otter")
        assert again.operation_id == first.operation_id
        with pytest.raises(KeyConflict):
            await rig.submit(key="otter", result_deadline=timedelta(minutes=10))


@pytest.mark.parametrize(("polled", "word"), [(False, "aborted"), (True, "canceled")])
async def test_a_replicate_deadline_reached_while_jobtrail_is_away(
    polled: bool, word: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """jobtrail stops after the create (and, for `canceled`, one read of the running
    prediction) and comes back two hours later: Replicate stopped the prediction at its
    deadline by itself, `aborted` before it ran, `canceled` while it ran (its output so far
    kept, marked partial). Either way the operation ends `cancelled`, never `succeeded`."""
    async with vendor_rig(
        "replicate", f"away-{word}", tmp_path, monkeypatch, shared_clock=True
    ) as rig:
        rig.faults(duration_polls=1000)
        op = await rig.submit()
        op = await rig.h.until(op, State.OBSERVING if polled else State.ACCEPTED)
        if polled:
            assert op.remote_state == "processing"
        rig.h.clock.advance(2 * 3600)  # the worker is down; nothing reads the prediction
        op = await rig.finish(op)
        assert op.state is State.CANCELLED and op.remote_state == word, op
        job = job_of(rig)
        assert job.ended_ts == job.deadline_ts  # type: ignore[attr-defined]
        if polled:
            assert op.result is not None and op.result.partial and op.result.valid
            assert op.usage and op.usage["billed_seconds"] > 0
        else:
            assert op.result is None  # nothing ran, nothing to keep
            assert op.usage is None  # aborted: nothing ran, nothing billed


async def test_a_mistral_job_past_its_timeout_hours_keeps_what_it_finished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 3-hour result deadline is `timeout_hours: 3`. Mistral ends the job at it
    (TIMEOUT_EXCEEDED) while jobtrail is away; jobtrail reads that end, collects the finished
    requests (partial, per item) and ends `failed`."""
    async with vendor_rig(
        "mistral-batch", "timeout", tmp_path, monkeypatch, shared_clock=True
    ) as rig:
        rig.faults(duration_polls=1000, finished_before_expiry=2)
        op = await rig.submit(result_deadline=timedelta(hours=3))
        assert op.request.body["timeout_hours"] == 3
        op = await rig.h.until(op, State.OBSERVING)
        rig.h.clock.advance(3 * 3600)
        op = await rig.finish(op)
        assert op.state is State.FAILED and op.remote_state == "TIMEOUT_EXCEEDED", op
        assert op.result is not None and op.result.partial and op.result.items is not None
        assert (op.result.items.succeeded, op.result.items.failed) == (2, 0)
        assert op.usage == {"requests": 3, "succeeded_requests": 2, "failed_requests": 0}


async def test_a_mistral_body_with_its_own_timeout_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`timeout_hours` is jobtrail's to write: a body asking for another value is refused
    with a clear error, before anything is recorded."""
    async with vendor_rig("mistral-batch", "own", tmp_path, monkeypatch) as rig:
        body = {**(rig.case.body or {}), "timeout_hours": 48}
        with pytest.raises(Exception, match="timeout_hours is written by jobtrail"):
            await rig.h.submit(body)
        assert await rig.h.rt.ledger.store.list_operations(limit=5) == []


async def test_openai_gets_its_one_completion_window_only_when_it_fits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OpenAI accepts "24h" only: written from the 25 h result deadline, and not at all from
    a 12 h one (the batch then stops only when cancelled, as explain says)."""
    async with vendor_rig("openai-batch", "window", tmp_path, monkeypatch) as rig:
        op = await rig.submit()
        assert op.request.body["completion_window"] == "24h"
        assert op.request.remote_deadline == 24 * 3600
        short = await rig.submit(result_deadline=timedelta(hours=12))
        assert short.request.remote_deadline is None
        assert short.request.body["completion_window"] == "24h"  # the caller's, untouched
