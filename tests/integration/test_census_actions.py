"""Acting on a census against the simulator's openai-batch mode: a job unknown here is
adopted (its status read first, then followed, collected and validated like any other), or
cancelled (adopted, the intent recorded, the cancel sent once and confirmed); a job ended
here is cancelled through its own operation; each under the action policy, each audited."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from census_rig import census_of, entries, ids, plant_batch, plant_report
from jobtrail.core.census import Category
from jobtrail.core.states import Evidence, RemoteStatus, State
from jobtrail.errors import ActionRefused, NotPermitted
from jobtrail.services.census_actions import adopt_job, cancel_job
from vendor_rig import vendor_rig

from harness import Harness

ORPHAN = "op_01JZZZZZZZZZZZZZZZZZZZZZZZ"


async def test_an_unknown_job_is_adopted_then_followed_to_its_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Adopted on a person's word: its status read is the first observation, the worker
    collects its result, and the next census finds it followed exactly once."""
    async with vendor_rig("openai-batch", "adopt", tmp_path, monkeypatch) as rig:
        job = await plant_batch(rig, ORPHAN)
        ledger, providers, spec = rig.h.rt.ledger, rig.h.rt.providers, rig.h.spec
        op = await adopt_job(ledger, providers, spec, job, actor="alice", reason="restored")
        assert op.state is State.ACCEPTED and op.remote_job_id == job
        history = await rig.h.history(op)
        assert [(t.from_state, t.to_state, t.evidence) for t in history] == [
            (State.CREATE_PENDING, State.ACCEPTED, Evidence.HUMAN_DECISION)
        ]
        assert history[0].actor == "alice"
        (first,) = await ledger.observations(op.operation_id)  # the adoption's status read
        assert first.source == "status" and first.remote_state == "finalizing"
        done = await rig.finish(op)
        assert done.state is State.SUCCEEDED and done.result is not None
        assert rig.create_calls() == 1  # the planted one: nothing was created for it
        census = await census_of(rig.h)
        assert ids(census, Category.FOLLOWED) == {job} and not census.of(Category.UNKNOWN_HERE)


async def test_adopting_a_followed_job_or_as_an_agent_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job an operation follows is not adopted again; an agent may not adopt (the default
    policy: a person decides), and the refusal is audited."""
    async with vendor_rig("openai-batch", "adopt-refused", tmp_path, monkeypatch) as rig:
        ledger, providers, spec = rig.h.rt.ledger, rig.h.rt.providers, rig.h.spec
        followed = await rig.h.until(await rig.submit(), State.OBSERVING)
        assert followed.remote_job_id is not None
        with pytest.raises(ActionRefused, match="already followed by"):
            await adopt_job(
                ledger, providers, spec, followed.remote_job_id, actor="alice", reason="x"
            )
        job = await plant_batch(rig, ORPHAN)
        with pytest.raises(NotPermitted):
            await adopt_job(ledger, providers, spec, job, actor="agent:bot", reason="mine")
        assert [e["actor"] for e in await entries(rig.h, "policy.refused")] == ["agent:bot"]
        with pytest.raises(ActionRefused, match="failed"):
            await adopt_job(ledger, providers, spec, "batch_nope", actor="alice", reason="x")
        census = await census_of(rig.h)
        assert ids(census, Category.UNKNOWN_HERE) == {job}


async def test_an_unknown_job_is_cancelled_and_the_cancel_confirmed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Adopted to cancel it: the intent first, the cancel sent once, `cancelled` only on the
    provider's word."""
    async with vendor_rig("openai-batch", "cancel", tmp_path, monkeypatch) as rig:
        ledger, providers, spec = rig.h.rt.ledger, rig.h.rt.providers, rig.h.spec
        job = await plant_batch(rig, ORPHAN)
        op = await cancel_job(ledger, providers, spec, job, actor="alice", reason="orphan")
        assert op.state is State.CANCEL_REQUESTED and op.cancel_intent is not None
        done = await rig.finish(op)
        assert done.state is State.CANCELLED, done
        cancels = [c for c in rig.h.sim.vendors.calls if c.kind == "cancel"]
        assert len(cancels) == 1


async def test_a_job_ended_here_is_cancelled_through_its_own_operation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A result deadline passed while the batch runs: the census finds it ended here, and
    cancelling it records the intent on the operation that follows it."""
    async with vendor_rig("openai-batch", "cancel-ended", tmp_path, monkeypatch) as rig:
        ledger, providers, spec = rig.h.rt.ledger, rig.h.rt.providers, rig.h.spec
        ended = await rig.submit(result_deadline=timedelta(seconds=30))
        ended = await rig.h.until(ended, State.RESULT_TIMED_OUT)
        assert ids(await census_of(rig.h), Category.ENDED_HERE) == {ended.remote_job_id}
        assert ended.remote_job_id is not None
        op = await cancel_job(
            ledger, providers, spec, ended.remote_job_id, actor="alice", reason="stop billing"
        )
        assert op.operation_id == ended.operation_id and op.state is State.CANCEL_REQUESTED
        done = await rig.finish(op)
        assert done.remote_status is RemoteStatus.CANCELLED, done  # on the provider's word
        assert len([c for c in rig.h.sim.vendors.calls if c.kind == "cancel"]) == 1
        assert not (await census_of(rig.h)).of(Category.ENDED_HERE)


async def test_a_duplicate_is_adopted_on_either_store(rig: Harness) -> None:
    """On SQLite and PostgreSQL: the duplicate under a followed operation's reference is
    adopted by a new operation, run to its result; both jobs are then followed once."""
    first = await rig.until(await rig.submit({"n": 1}), State.SUCCEEDED)
    duplicate = await plant_report(rig, first.operation_id)
    ledger, providers = rig.rt.ledger, rig.rt.providers
    op = await adopt_job(ledger, providers, rig.spec, duplicate, actor="alice", reason="keep")
    assert op.state is State.ACCEPTED and op.key == f"census:simulator:{duplicate}"
    with pytest.raises(ActionRefused, match="already followed by"):
        await adopt_job(ledger, providers, rig.spec, duplicate, actor="alice", reason="again")
    done = await rig.until(op, State.SUCCEEDED)
    assert done.result is not None and done.result.valid
    census = await census_of(rig)
    assert ids(census, Category.FOLLOWED) == {first.remote_job_id, duplicate}
    assert not census.of(Category.SECOND_JOB)
