"""The lean poll path against the real simulator and worker: a status read is recorded once,
after the call, and unchanged reads fold into one observation run (DESIGN rules 12 and 14)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jobtrail.core.model import Operation
from jobtrail.core.states import State
from jobtrail.presentation.explain import explain_text

from harness import Harness, harness


def _fast_polls(doc: dict[str, Any]) -> None:
    doc["poll"] = {"initial": "1s", "cap": "1s"}


@pytest.fixture
async def rig(store_kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    async with harness(tmp_path, edit=_fast_polls, monkeypatch=monkeypatch, kind=store_kind) as h:
        yield h


async def _rows(rig: Harness, op: Operation) -> dict[str, int]:
    store, oid = rig.rt.ledger.store, op.operation_id
    return {
        "observations": len(await store.observations(oid)),
        "attempts": len(await store.attempts(oid)),
        "audit": len(await store.audit_rows(oid)),
        "transitions": len(await store.history(oid)),
        "leases": len(await store.leases(oid)),
    }


async def _polls(rig: Harness, op: Operation, n: int) -> None:
    for _ in range(n):
        assert await rig.tick() == 1
    assert (await rig.op(op)).state is State.OBSERVING


@pytest.mark.slow  # a thousand polls through the real worker
async def test_a_thousand_unchanged_polls_add_no_rows(rig: Harness) -> None:
    """An operation polled 1,000 times without change holds exactly the rows of one polled
    twice: the reads fold into one observation run, with no attempt, audit or lease row of
    their own, and `explain` reads the run as "1000 status reads"."""
    op = await rig.submit({"account": "a", "_sim": {"never_finish": True}})
    await rig.tick()  # the create
    await _polls(rig, op, 2)
    twice = await _rows(rig, op)
    await _polls(rig, op, 998)
    assert await _rows(rig, op) == twice
    assert len(rig.calls(op, "status")) == 1000
    store = rig.rt.ledger.store
    runs = [ob for ob in await store.observations(op.operation_id) if ob.source == "status"]
    assert [(ob.remote_state, ob.seen_count, ob.closed_at) for ob in runs] == [
        ("running", 1000, None)
    ]
    entries = [json.loads(row.entry) for row in await store.audit_rows(op.operation_id)]
    assert [e["data"]["kind"] for e in entries if e["kind"].startswith("attempt.")] == [
        "create",
        "create",
    ]
    after = await rig.op(op)
    text = explain_text(
        after,
        await store.history(op.operation_id),
        await store.attempts(op.operation_id),
        await store.observations(op.operation_id),
        rig.clock.now(),
    )
    assert "1000 status reads: remote running" in text


async def test_a_status_read_commits_once_with_its_outcome(rig: Harness) -> None:
    """A status read writes no intent before the call: its attempt row appears once, finished,
    and the audit log gains no attempt entry for it; a create still records its intent."""
    op = await rig.submit({"account": "a", "_sim": {"duration_polls": 3}})
    await rig.until(op, State.SUCCEEDED)
    store = rig.rt.ledger.store
    attempts = await store.attempts(op.operation_id)
    assert all(a.finished_at is not None for a in attempts)
    kinds = [a.kind.value for a in attempts]
    assert kinds[0] == "create" and kinds[-1] == "result"
    entries = [json.loads(row.entry) for row in await store.audit_rows(op.operation_id)]
    intents = [e["data"]["kind"] for e in entries if e["kind"] == "attempt.intent"]
    assert intents == ["create"]
    outcomes = [e["data"]["kind"] for e in entries if e["kind"] == "attempt.outcome"]
    assert outcomes == ["create"]
    sealed = [e["data"] for e in entries if e["kind"] == "observation.run"]
    assert sealed and all(s["source"] == "status" for s in sealed)
    assert not [ob for ob in await store.observations(op.operation_id) if ob.closed_at is None]


async def test_a_changed_remote_state_starts_a_new_run(rig: Harness) -> None:
    """Reads fold only while the remote state stays the same: the final read of a job that
    finished opens a run of its own and the running run is closed and sealed."""
    op = await rig.submit({"account": "a", "_sim": {"duration_polls": 5}})
    await rig.until(op, State.SUCCEEDED)
    store = rig.rt.ledger.store
    runs = [ob for ob in await store.observations(op.operation_id) if ob.source == "status"]
    assert [ob.remote_state for ob in runs] == ["running", "succeeded"]
    assert runs[0].seen_count == len(rig.calls(op, "status")) - 1
    assert all(ob.closed_at is not None for ob in runs)
