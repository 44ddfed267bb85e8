"""The "seen again" fast path (worker/seen.py) against the real simulator and worker: a
status answer byte-identical to the last one read is recorded as one more read of the open
observation run without being decoded, and the record moves as the core would move it; an
answer that differs in anything the core reads (a Retry-After, the progress) is judged in
full, as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jobtrail.core.model import Observation, Operation
from jobtrail.core.states import State
from jobtrail.providers.http import parse

from harness import Harness, harness


def _fast_polls(doc: dict[str, Any]) -> None:
    doc["poll"] = {"initial": "1s", "cap": "1s"}


@pytest.fixture
async def rig(store_kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    async with harness(tmp_path, edit=_fast_polls, monkeypatch=monkeypatch, kind=store_kind) as h:
        yield h


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The status answers the HTTP provider decodes, counted on the way (each still is)."""
    seen: list[str] = []
    real = parse.parse_status

    def counting(*args: Any, **kwargs: Any) -> Any:
        seen.append("status")
        return real(*args, **kwargs)

    monkeypatch.setattr(parse, "parse_status", counting)
    return seen


async def _open_run(rig: Harness, op: Operation) -> Observation:
    runs = await rig.rt.ledger.store.observations(op.operation_id)
    (run,) = [ob for ob in runs if ob.source == "status" and ob.closed_at is None]
    return run


async def _poll(rig: Harness, op: Operation, n: int) -> Operation:
    for _ in range(n):
        assert await rig.tick() == 1
    return await rig.op(op)


def _wait(op: Operation) -> float:
    assert op.next_poll_at is not None and op.updated_at is not None
    return (op.next_poll_at - op.updated_at).total_seconds()


async def test_an_identical_answer_is_seen_again_without_being_decoded(
    rig: Harness, decoded: list[str]
) -> None:
    """Once a running job's answer stops changing, its reads are not decoded: each is one
    more read of the open run (seen count, last time), the poll counted and the lease given
    back, with no attempt or audit row, exactly as a judged unchanged read is recorded."""
    op = await rig.submit({"account": "a", "_sim": {"never_finish": True, "items": 1}})
    await rig.tick()  # the create
    judged = await _poll(rig, op, 2)  # the first moves to observing, the second is judged
    assert judged.state is State.OBSERVING and len(decoded) == 2
    store = rig.rt.ledger.store
    attempts = len(await store.attempts(op.operation_id))
    audit = len(await store.audit_rows(op.operation_id))
    before = await _open_run(rig, op)
    after = await _poll(rig, op, 20)
    assert len(decoded) == 2  # twenty answers, none decoded
    assert len(rig.calls(op, "status")) == 22
    run = await _open_run(rig, op)
    assert run.seen_count == 22 and run.last_seen_at == after.updated_at
    assert run.request_id and run.request_id != before.request_id  # the last answer's own
    assert after.poll_count == judged.poll_count + 20
    assert after.version > judged.version and after.lease_owner is None
    assert _wait(after) == pytest.approx(1.0)  # the backoff, as judged
    assert len(await store.attempts(op.operation_id)) == attempts
    assert len(await store.audit_rows(op.operation_id)) == audit


async def test_an_answer_with_another_retry_after_is_judged_and_honoured(
    rig: Harness, decoded: list[str]
) -> None:
    """An answer equal to the last but for its Retry-After is not the same answer: it is
    decoded, and the reads that repeat it wait as long as its Retry-After says."""
    faults = {
        "never_finish": True,
        "items": 1,
        "status_retry_after": 7,
        "status_hint": {"value": "zero", "times": 3},  # Retry-After: 0 on the first three
    }
    op = await rig.submit({"account": "a", "_sim": faults})
    await rig.tick()
    zero = await _poll(rig, op, 3)  # judged, judged, then seen again
    assert len(decoded) == 2 and _wait(zero) == pytest.approx(1.0)  # Retry-After 0: the floor
    changed = await _poll(rig, op, 1)  # Retry-After: 7 now, the body the same
    assert len(decoded) == 3 and _wait(changed) == pytest.approx(7.0)
    again = await _poll(rig, op, 2)
    assert len(decoded) == 3 and _wait(again) == pytest.approx(7.0)
    assert (await _open_run(rig, op)).seen_count == 6


async def test_an_answer_whose_progress_moved_is_judged(rig: Harness, decoded: list[str]) -> None:
    """A running job whose progress moves on each read is judged on each read (the run keeps
    its latest progress); once the progress stops, the repeats are seen again."""
    op = await rig.submit({"account": "a", "_sim": {"never_finish": True, "items": 4}})
    await rig.tick()
    await _poll(rig, op, 4)  # 1/4, 2/4, 3/4, 4/4
    assert len(decoded) == 4
    await _poll(rig, op, 3)
    assert len(decoded) == 4
    run = await _open_run(rig, op)
    assert run.last_progress == {"completed": 4, "total": 4} and run.seen_count == 7
