"""`GET /metrics` scraped over loopback HTTP during a fault run (throttled creates, a lost
create answer, a contract violation, an ignored cancel): every number agrees with the
ledger read directly, and the endpoint refuses a scrape without an operator's token."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta

import aiohttp
import pytest
from aiohttp import web

from jobtrail.core.metrics import call_class
from jobtrail.core.model import Operation
from jobtrail.core.nextstep import PERSON_STATES
from jobtrail.core.states import State
from jobtrail.dashboard.access import Access, Operator, Role, token_hash
from jobtrail.dashboard.metrics import Metrics
from jobtrail.services.runtime import Runtime, runtime

from harness import SECRET, Harness

TOKEN = "viewer-token-for-metrics-0123456789"
LES = ("0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30", "60", "+Inf")
S = State


@asynccontextmanager
async def served(rig: Harness) -> AsyncIterator[str]:
    access = Access([Operator(name="ops", role=Role.READ_ONLY, token_hash=token_hash(TOKEN))])
    app = web.Application()
    Metrics(rig.rt.ledger, access).add_routes(app)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}/metrics"
    finally:
        await runner.cleanup()


async def scrape(url: str, token: str | None = TOKEN) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession() as s, s.get(url, headers=headers) as answer:
        return answer.status, await answer.text()


def samples(text: str) -> dict[str, float]:
    """Each sample line's name with labels -> value."""
    found = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            found[name] = float(value)
    return found


def family(found: dict[str, float], name: str) -> dict[str, float]:
    return {k: v for k, v in found.items() if k == name or k.startswith(name + "{")}


def status_reads(rig: Harness) -> int:
    """The status reads the simulator answered (or refused), as it counted them."""
    return sum(1 for call in rig.sim.calls if call.kind == "status")


def histogram(found: dict[str, float], provider: str = "simulator") -> dict[str, float]:
    """The poll lateness histogram of `provider`: le -> cumulative count, "sum", "count"."""
    name, label = "jobtrail_poll_lateness_seconds", f'provider="{provider}"'
    shown = {
        k.split('le="')[1].rstrip('"}'): v
        for k, v in family(found, name + "_bucket").items()
        if label in k
    }
    if shown:
        shown["sum"] = found[f"{name}_sum{{{label}}}"]
        shown["count"] = found[f"{name}_count{{{label}}}"]
    return shown


async def check_against_ledger(rig: Harness, url: str) -> dict[str, float]:
    await rig.rt.flush_lateness()  # as the worker does every few seconds
    status, text = await scrape(url)
    assert status == 200 and SECRET not in text
    found = samples(text)
    ledger, store = rig.rt.ledger, rig.rt.ledger.store
    ops = await store.list_operations(limit=1000)
    by_state = await store.count_by_state()
    shown = family(found, "jobtrail_operations")
    assert sum(shown.values()) == len(ops)
    for state, n in by_state.items():
        assert sum(v for k, v in shown.items() if f'state="{state.value}"' in k) == n
    person = sum(n for s, n in by_state.items() if s in PERSON_STATES)
    assert found["jobtrail_operations_needing_person"] == person
    calls: dict[str, float] = {}
    for op in ops:
        for a in await store.attempts(op.operation_id):
            key = (
                f'jobtrail_calls_total{{kind="{a.kind.value}",provider="{op.provider}",'
                f'outcome="{call_class(a.outcome)}"}}'
            )
            calls[key] = calls.get(key, 0) + 1
        for ob in await store.observations(op.operation_id):
            if ob.source == "status" and ob.seen_count > 1:
                labels = f'kind="status",provider="{op.provider}",outcome="accepted"'
                key = f"jobtrail_calls_total{{{labels}}}"
                calls[key] = calls.get(key, 0) + ob.seen_count - 1
    assert family(found, "jobtrail_calls_total") == calls
    tiers: dict[str, float] = {}
    for op in ops:
        if op.state in (S.CREATE_UNKNOWN, S.RECONCILIATION):
            caps = op.capabilities
            tier = caps.lookup_tier if op.state is S.RECONCILIATION else caps.tier
            key = f'jobtrail_create_unsettled_by_tier{{state="{op.state.value}",tier="{tier}"}}'
            tiers[key] = tiers.get(key, 0) + 1
    assert family(found, "jobtrail_create_unsettled_by_tier") == tiers
    backlog = sum(1 for box in await ledger.notices() if box.due_at is not None)
    assert found["jobtrail_notice_backlog"] == backlog
    due = await store.next_due()
    late = 0.0 if due is None else max(0.0, (rig.clock.now() - due).total_seconds())
    assert found["jobtrail_oldest_due_lateness_seconds"] == float(f"{late:g}")
    lateness = histogram(found)
    assert lateness.get("count", 0) == status_reads(rig)  # every read, folded or not
    if lateness:
        cumulative = [lateness[le] for le in LES]
        assert cumulative == sorted(cumulative) and cumulative[-1] == lateness["count"]
    return found


async def test_metrics_agree_with_the_ledger_during_a_fault_run(rig: Harness) -> None:
    """Scraped mid-run and at the end, every family matches the ledger's own records."""
    throttle = {"status": 429, "retry_after": 3, "times": 2}
    await rig.submit({"account": "a", "_sim": {"throttle_create": throttle}})
    await rig.submit({"account": "b", "_sim": {"drop_create_answer": True}})
    await rig.submit(
        {"account": "c", "_sim": {"drop_create_answer": True, "different_id_on_retry": True}}
    )
    slow = await rig.submit({"account": "d", "_sim": {"duration_polls": 6}})
    ignored = await rig.submit(
        {"account": "e", "_sim": {"cancel": "ignore", "never_finish": True}},
        cancel_deadline=timedelta(minutes=5),
    )
    async with served(rig) as url:
        assert (await scrape(url, token=None))[0] == 401
        assert (await scrape(url, token="not-a-token"))[0] == 401
        await rig.tick()
        first = await check_against_ledger(rig, url)
        assert family(first, "jobtrail_create_unsettled_by_tier")  # the lost create answers
        await rig.until(ignored, S.OBSERVING)
        await rig.rt.ledger.cancel(ignored.operation_id, actor="alice", reason="too long")
        await rig.until(slow, S.OBSERVING)
        mid = await check_against_ledger(rig, url)
        assert any("throttled" in k for k in family(mid, "jobtrail_calls_total"))
        await rig.run()
        end = await check_against_ledger(rig, url)
    assert end["jobtrail_operations_needing_person"] == 2  # needs_human, cancellation_unconfirmed
    assert end["jobtrail_notice_backlog"] == 2
    assert end['jobtrail_operations{state="succeeded",provider="simulator"}'] == 3
    assert histogram(end)["count"] == status_reads(rig) > 6  # the slow job's polls at least


async def observing(rig: Harness, n: int) -> list[Operation]:
    """`n` operations whose jobs run on, each with a status read scheduled."""
    ops = [await rig.submit({"account": f"o{i}", "_sim": {"never_finish": True}}) for i in range(n)]
    return [await rig.until(op, S.OBSERVING) for op in ops]


async def come_late(rig: Harness, ops: list[Operation], by: float) -> datetime:
    """Move the clock `by` seconds past the latest of the operations' next poll times."""
    due = [(await rig.op(op)).next_poll_at for op in ops]
    start = max(d for d in due if d is not None) + timedelta(seconds=by)
    rig.clock.advance((start - rig.clock.now()).total_seconds())
    return start


async def drive_due(rt: Runtime, owner: str) -> int:
    """What is due now claimed and driven once by `rt`'s runner (a worker's round)."""
    claims = await rt.ledger.claim(owner, 100, rt.runner.lease_for)
    for claim in claims:
        await rt.runner.drive(claim.operation)
    return len(claims)


async def test_reads_made_late_show_their_known_lateness(rig: Harness) -> None:
    """A worker that comes 7 s after the last of the due times reads each operation late by
    that, plus how much earlier it was due: each read lands in the bucket of its own lateness,
    and the sum is theirs."""
    ops = await observing(rig, 4)
    async with served(rig) as url:
        before = histogram(await check_against_ledger(rig, url))
        due = [(await rig.op(op)).next_poll_at for op in ops]
        assert all(due) and len({*due}) > 1  # spread out by the simulator's answers
        start = await come_late(rig, ops, 7)
        reads = status_reads(rig)
        assert await drive_due(rig.rt, "late-worker") == 4
        assert status_reads(rig) == reads + 4
        after = histogram(await check_against_ledger(rig, url))
    late = [(start - d).total_seconds() for d in due if d is not None]
    assert min(late) == 7.0
    expected = {le: sum(1 for s in late if s <= float(le)) for le in LES}
    assert {le: after[le] - before[le] for le in LES} == expected
    assert after["count"] - before["count"] == 4
    assert after["sum"] - before["sum"] == pytest.approx(sum(late), rel=1e-9)


async def test_workers_flush_on_their_timer_and_when_they_stop(rig: Harness) -> None:
    """Two more workers on the same ledger, neither asked to flush: one's counts arrive by
    its timer while it runs, the other's when it stops; the scrape sums all three workers'
    reads, and matches the simulator's count of them."""
    ops = await observing(rig, 3)
    await rig.rt.flush_lateness()  # the first worker's reads so far: only the others' wait
    ticking = dict(worker_id="worker-2", clock=rig.clock, lateness_every=0.1)
    async with served(rig) as url, runtime(rig.db, rig.data, **ticking) as second:
        first = status_reads(rig)
        await come_late(rig, ops, 1)
        assert await drive_due(second, "worker-2") == 3
        for _ in range(50):  # its timer's flush, within seconds (real time)
            if histogram(samples((await scrape(url))[1]))["count"] == first + 3:
                break
            await asyncio.sleep(0.1)
        shown = histogram(await check_against_ledger(rig, url))
        assert shown["count"] == status_reads(rig) == first + 3
    stopping = dict(worker_id="worker-3", clock=rig.clock, lateness_every=3600)
    async with runtime(rig.db, rig.data, **stopping) as third:
        await come_late(rig, ops, 1)
        assert await drive_due(third, "worker-3") == 3
        counted = (await rig.rt.ledger.metric_counts()).lateness
        assert sum(n for n, _ in counted.values()) < status_reads(rig)  # not yet
    async with served(rig) as url:
        end = histogram(await check_against_ledger(rig, url))
    assert end["count"] == status_reads(rig) == first + 6
