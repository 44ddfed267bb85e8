"""The census against the simulator over loopback: a scanned listing (openai-batch's vendor
mode) finds every planted job in its category and stops at its cap on a long listing; a
listing the provider filters (the simulator's own profile) is asked once per operation and
finds a second job; every census is recorded in the audit log, its credential never."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from census_rig import census_of, entries, ids, plant_batch, plant_report
from jobtrail.core.audit import verify
from jobtrail.core.census import Category, Sight
from jobtrail.core.states import State
from jobtrail.providers.file.config import parse_provider
from vendor_rig import vendor_rig

from harness import SECRET, Harness


async def test_a_scanned_listing_finds_every_planted_job_in_its_category(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Followed, ended here (a result deadline passed while the batch runs), unknown here
    (a marker no operation holds), a second job (a marker naming an operation that follows
    another batch) and not ours: each found where it belongs, and nothing else there."""
    async with vendor_rig("openai-batch", "census", tmp_path, monkeypatch) as rig:
        ended = await rig.submit(result_deadline=timedelta(seconds=30))
        ended = await rig.h.until(ended, State.RESULT_TIMED_OUT)
        assert ended.remote_job_id is not None
        followed = await rig.h.until(await rig.submit(), State.OBSERVING)
        unknown = await plant_batch(rig, "op_01JZZZZZZZZZZZZZZZZZZZZZZZ")
        second = await plant_batch(rig, followed.operation_id)
        others = {await plant_batch(rig, None) for _ in range(2)}

        census = await census_of(rig.h)

        assert census.sight is Sight.LISTING and census.reach.complete, census.reach
        assert ids(census, Category.FOLLOWED) == {followed.remote_job_id}
        assert ids(census, Category.ENDED_HERE) == {ended.remote_job_id}
        assert ids(census, Category.UNKNOWN_HERE) == {unknown}
        assert ids(census, Category.SECOND_JOB) == {second}
        assert ids(census, Category.NOT_OURS) == others
        taken = await entries(rig.h, "census.taken")
        assert len(taken) == 1 and taken[0]["actor"] == "person:alice"
        assert taken[0]["data"]["counts"] == {
            "followed": 1,
            "ended_here": 1,
            "unknown_here": 1,
            "second_job": 1,
            "not_ours": 2,
        }
        calls = await entries(rig.h, "census.call")
        assert [c["data"]["request"]["url"] for c in calls] == [
            f"{rig.h.sim.base_url}/openai/v1/batches?limit=100"
        ]
        assert calls[0]["data"]["outcome"] == "found"
        assert SECRET not in str([r.entry for r in await rig.h.rt.ledger.audit_rows()])
        assert verify(await rig.h.rt.ledger.audit_rows(), None).ok


async def test_a_scanned_listing_stops_at_its_cap_and_says_how_far_it_got(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages of two, a cap of two pages, six batches: the census asks twice, names the four
    it saw, and says it was cut short at the cap; the oldest orphans stay unseen."""
    async with vendor_rig("openai-batch", "census-cap", tmp_path, monkeypatch) as rig:
        doc: dict[str, Any] = dict(rig.h.spec.document)
        listing = dict(doc["reconcile"]["list"])
        doc["reconcile"] = {"list": {**listing, "path": "/v1/batches?limit=2", "pages": 2}}
        rig.h.spec = parse_provider(doc)
        planted = [await plant_batch(rig, f"op_01JZZZZZZZZZZZZZZZZZZZZZZ{n}") for n in range(6)]

        census = await census_of(rig.h)

        assert not census.reach.complete
        assert census.reach.requests == 2 and census.reach.listed == 4
        assert "cap of 2 page(s)" in census.reach.words()
        assert ids(census, Category.UNKNOWN_HERE) == set(planted[2:])  # newest first
        assert not census.of(Category.SECOND_JOB)


async def test_a_filtered_listing_is_asked_per_operation_and_finds_a_second_job(
    rig: Harness,
) -> None:
    """The simulator filters its listing on one reference: the census asks it once per
    operation that may have a job, finds the followed job and a duplicate under the same
    reference, and says it cannot see jobs of operations the ledger does not hold."""
    followed = await rig.until(await rig.submit({"n": 1}), State.OBSERVING)
    await rig.submit({"n": 2})  # never sent: nothing to ask about
    second = await plant_report(rig, followed.operation_id)
    await plant_report(rig, "op_01JZZZZZZZZZZZZZZZZZZZZZZZ")  # invisible to this census

    census = await census_of(rig)

    assert census.sight is Sight.PER_OPERATION and census.reach.complete
    assert census.reach.requests == 1
    assert ids(census, Category.FOLLOWED) == {followed.remote_job_id}
    assert ids(census, Category.SECOND_JOB) == {second}
    assert not census.of(Category.UNKNOWN_HERE)
    assert "never a job this ledger holds no operation for" in census.sees


async def test_a_listing_that_asks_to_wait_stops_the_census_until_then(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A provider answering the listing 429 with Retry-After: the census sends nothing
    more, says it was cut short and why, and records the throttled call."""
    asked: list[str] = []

    async def throttled(request: web.Request) -> web.Response:
        asked.append(request.path_qs)
        return web.json_response({"error": {"message": "slow down"}}, status=429,
                                 headers={"Retry-After": "120"})  # fmt: skip

    app = web.Application()
    app.router.add_get("/v1/batches", throttled)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        async with vendor_rig("openai-batch", "census-429", tmp_path, monkeypatch) as rig:
            doc: dict[str, Any] = dict(rig.h.spec.document)
            rig.h.spec = parse_provider({**doc, "base_url": f"http://127.0.0.1:{port}"})
            census = await census_of(rig.h)
            assert asked == ["/v1/batches?limit=100"]
            assert not census.reach.complete and "Retry-After 120" in (census.reach.stopped or "")
            (call,) = await entries(rig.h, "census.call")
            assert call["data"]["outcome"] == "throttled" and call["data"]["http_status"] == 429
    finally:
        await runner.cleanup()
