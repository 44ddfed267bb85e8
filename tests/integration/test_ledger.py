"""The ledger on a real SQLite file and on PostgreSQL: the record comes first, refusals
change nothing, and whatever happens, the stored history replays to the stored state."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobtrail.core import outcomes as o
from jobtrail.core.replay import replay
from jobtrail.core.states import Evidence, RemoteStatus, State
from jobtrail.errors import ActionRefused, InvalidInput
from jobtrail.store import open_store

from harness import Harness, harness


async def test_submit_commits_the_record_before_anything_is_sent(rig: Harness) -> None:
    """After submit the record is durable (visible to a fresh connection); nothing was sent."""
    op = await rig.submit({"account": "a"}, key="k1", authorized_by="alice", reason="report")
    other = await open_store(rig.db)
    try:
        stored = await other.get(op.operation_id)
    finally:
        await other.close()
    assert stored is not None and stored.state is State.CREATE_PENDING
    assert (stored.idempotency_token, stored.authorized_by) == (op.idempotency_token, "alice")
    assert rig.sim.calls == []


async def test_an_uncommitted_operation_is_never_sent(rig: Harness) -> None:
    """There is no path that sends a create for an operation missing from the ledger."""
    op = await rig.submit({"account": "a"})
    ghost = replace(op, operation_id="op_not_in_the_ledger", lease_owner="worker-1", fence=1)
    assert await rig.rt.runner.drive(ghost) is None
    assert rig.sim.calls == []


async def test_refused_actions_change_nothing(rig: Harness) -> None:
    """A decision that does not fit the state is refused and leaves the record as it was."""
    op = await rig.submit({"account": "a"})
    decision = o.HumanDecision(decision=o.Decision.ADOPT, actor="bob", reason="r", job_id="j")
    with pytest.raises(ActionRefused):
        await rig.rt.ledger.decide(op.operation_id, decision)
    after = await rig.op(op)
    assert after.version == op.version and await rig.history(op) == []


async def test_cancel_is_refused_where_it_means_nothing(rig: Harness) -> None:
    """No cancel for ended operations, nor for providers without a cancel endpoint."""
    op = await rig.submit({"account": "a", "_sim": {"reject_create": {"status": 400}}})
    await rig.run()
    with pytest.raises(ActionRefused, match="no running job"):
        await rig.rt.ledger.cancel(op.operation_id, actor="a", reason="r")
    no_cancel = dict(rig.spec.document)
    no_cancel.pop("cancel")
    from jobtrail.providers.file.config import parse_provider

    other = await rig.rt.ledger.submit(parse_provider(no_cancel), {"x": 1}, actor="a")
    with pytest.raises(ActionRefused, match="no cancel endpoint"):
        await rig.rt.ledger.cancel(other.operation_id, actor="a", reason="r")


async def test_credentials_in_request_headers_are_refused(rig: Harness) -> None:
    """A credential passed as a request header is refused before anything is stored."""
    with pytest.raises(InvalidInput, match="carries a credential"):
        await rig.submit({"a": 1}, headers={"X-Api-Key": "k"})
    assert await rig.rt.ledger.store.list_operations() == []


FAULTS = st.sampled_from(
    [
        {},
        {"drop_create_answer": True},
        {"failed_items": 1},
        {"outcome": "failed"},
        {"bad_checksum": True},
        {"result_gone": 410},
        {"never_finish": True},
        {"drop_create_answer": True, "different_id_on_retry": True},
        {"throttle_status": {"status": 503, "retry_after": 3, "times": 2}},
        {"status_error": 2},
        {"cancel": "race", "duration_polls": 4},
        {"cancel": "ignore", "duration_polls": 30},
        {"cancel": "honour", "never_finish": True},
        {"reject_create": {"status": 422}},
        {"create_error_after_accept": 500},
    ]
)


@pytest.mark.slow  # Hypothesis: many end-to-end runs per store
@settings(
    max_examples=8,
    deadline=None,
    # store_kind is a word ("sqlite" or "postgres"), the same for every example
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.lists(st.tuples(FAULTS, st.booleans()), min_size=1, max_size=6))
def test_any_mix_of_faults_keeps_the_stored_history_honest(
    store_kind: str, mix: list[tuple[dict, bool]]
) -> None:
    """For any mix of faults and cancels: each stored history replays to the stored state,
    succeeded always has a validated result, cancelled always a remote cancelled observation."""
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as mp:
        asyncio.run(_run_mix(Path(folder), mp, mix, store_kind))


async def _run_mix(
    folder: Path, mp: pytest.MonkeyPatch, mix: list[tuple[dict, bool]], kind: str
) -> None:
    async with harness(folder, monkeypatch=mp, kind=kind) as rig:
        ops = [
            await rig.submit(
                {"n": n, "_sim": fault},
                result_deadline=timedelta(minutes=30),
                cancel_deadline=timedelta(minutes=5),
            )
            for n, (fault, _) in enumerate(mix)
        ]
        for _ in range(3):
            await rig.tick()
        for op, (_, cancel) in zip(ops, mix, strict=True):
            if cancel:
                with contextlib.suppress(ActionRefused):
                    await rig.rt.ledger.cancel(op.operation_id, actor="alice", reason="stop")
        await rig.run()
        store = rig.rt.ledger.store
        for op in ops:
            stored = await rig.op(op)
            history = await store.history(op.operation_id)
            assert stored.state.ends_automation
            assert replay(history) is stored.state
            if stored.state is State.SUCCEEDED:
                assert stored.result is not None and stored.result.valid
                assert history[-1].evidence is Evidence.RESULT_VALIDATED
            if stored.state is State.CANCELLED:
                seen = await store.observations(op.operation_id)
                assert any(ob.remote_status is RemoteStatus.CANCELLED for ob in seen)


async def test_equal_results_stored_at_once_both_succeed(tmp_path: Path) -> None:
    """Two concurrent stores of the same content (two operations, same result) both land."""
    from jobtrail.results.blobs import BlobStore

    blobs = BlobStore(tmp_path)
    content = b"id,status\nitem-1,succeeded\n" * 1000
    locations = await asyncio.gather(*(blobs.put(content) for _ in range(16)))
    assert len(set(locations)) == 1 and Path(locations[0]).read_bytes() == content
