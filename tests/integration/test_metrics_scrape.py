"""`GET /metrics` scraped over loopback HTTP during a fault run (throttled creates, a lost
create answer, a contract violation, an ignored cancel): every number agrees with the
ledger read directly, and the endpoint refuses a scrape without an operator's token."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta

import aiohttp
from aiohttp import web

from jobtrail.core.metrics import call_class
from jobtrail.core.nextstep import PERSON_STATES
from jobtrail.core.states import State
from jobtrail.dashboard.access import Access, Operator, Role, token_hash
from jobtrail.dashboard.metrics import Metrics

from harness import SECRET, Harness

TOKEN = "viewer-token-for-metrics-0123456789"
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


async def check_against_ledger(rig: Harness, url: str) -> dict[str, float]:
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
