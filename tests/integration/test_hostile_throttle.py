"""A provider that throttles with `Retry-After: 0` (or 1) on every call (issue 19): 429 or
503 to the create, to status reads and to the cancel. jobtrail backs off all the same, the
hint being the earliest time of the next call, not its time: the waits between throttled
calls grow, instead of one call a second for hours. A real SQLite ledger, the
simulator over loopback, the real worker on a virtual clock."""

from __future__ import annotations

import asyncio
import itertools
from datetime import timedelta

import pytest

from jobtrail.core.model import Attempt, AttemptKind, Operation
from jobtrail.core.states import State

from harness import Harness

# What a provider says and how it is scheduled: the same on every store (SQLite only).
pytestmark = pytest.mark.sqlite_only

THROTTLES = 7


async def calls(rig: Harness, op: Operation, kind: AttemptKind) -> list[Attempt]:
    attempts = await rig.rt.ledger.store.attempts(op.operation_id)
    return sorted((a for a in attempts if a.kind is kind), key=lambda a: a.started_at)


def backs_off(attempts: list[Attempt]) -> list[float]:
    """The waits between the throttled calls (and the one after the last throttle)."""
    times = [a.started_at for a in attempts[: THROTTLES + 1]]
    waits = [(b - a).total_seconds() for a, b in itertools.pairwise(times)]
    assert len(waits) == THROTTLES, waits
    # held to the floor, seven throttles take about seven seconds; backing off (about 1,
    # 2, 4, 8 ... s up to the cap, with jitter) they take a minute or more
    assert waits[-1] > 8 * waits[0] and sum(waits) > 45, waits
    return waits


@pytest.mark.parametrize("status", [429, 503])
@pytest.mark.parametrize("hint", [0, 1])
async def test_a_throttled_create_backs_off_whatever_its_retry_after(
    rig: Harness, status: int, hint: int
) -> None:
    throttle = {"status": status, "retry_after": hint, "times": THROTTLES}
    op = await rig.submit({"account": "a", "_sim": {"throttle_create": throttle}})
    await asyncio.wait_for(rig.run(), timeout=120)
    assert (await rig.op(op)).state is State.SUCCEEDED
    creates = await calls(rig, op, AttemptKind.CREATE)
    assert [a.http_status for a in creates] == [status] * THROTTLES + [202]
    backs_off(creates)
    assert rig.sim.state.counts["create"] == THROTTLES + 1  # and one job
    assert len(rig.sim.state.jobs) == 1


@pytest.mark.parametrize("status", [429, 503])
async def test_throttled_status_reads_back_off_whatever_their_retry_after(
    rig: Harness, status: int
) -> None:
    throttle = {"status": status, "retry_after": 0, "times": THROTTLES}
    op = await rig.submit({"account": "a", "_sim": {"throttle_status": throttle}})
    await asyncio.wait_for(rig.run(), timeout=120)
    assert (await rig.op(op)).state is State.SUCCEEDED
    reads = await calls(rig, op, AttemptKind.STATUS)
    assert [a.http_status for a in reads[:THROTTLES]] == [status] * THROTTLES
    backs_off(reads)


async def test_a_throttled_cancel_backs_off_whatever_its_retry_after(rig: Harness) -> None:
    throttle = {"status": 429, "retry_after": 0, "times": THROTTLES}
    faults = {"never_finish": True, "throttle_cancel": throttle}
    op = await rig.submit({"account": "a", "_sim": faults}, cancel_deadline=timedelta(minutes=30))
    await rig.until(op, State.OBSERVING)
    await rig.rt.ledger.cancel(op.operation_id, actor="alice", reason="not needed")
    await asyncio.wait_for(rig.run(), timeout=120)
    assert (await rig.op(op)).state is State.CANCELLED
    cancels = await calls(rig, op, AttemptKind.CANCEL)
    assert [a.http_status for a in cancels] == [429] * THROTTLES + [202]
    backs_off(cancels)
