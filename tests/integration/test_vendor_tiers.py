"""How far a lost create answer is resolved, per profile, against the simulator's vendor
modes: by the provider's own token, by a server-side filter on our reference, by a bounded
scan of a listing (found past its first page; stopped in doubt at its cap), or not at all
(in doubt). `explain` names the tier that resolved it; nothing is ever created twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import pytest

from jobtrail.core.states import Evidence, State
from jobtrail.presentation.explain import explain_text
from jobtrail.providers.file.config import parse_provider
from vendor_rig import Rig, vendor_rig

from harness import SECRET


async def told(rig: Rig, op_id: str) -> str:
    store = rig.h.rt.ledger.store
    return explain_text(
        await rig.h.op(op_id),
        await store.history(op_id),
        await store.attempts(op_id),
        await store.observations(op_id),
        rig.h.clock.now(),
    )


@pytest.mark.parametrize(
    ("name", "state", "words"),
    [
        ("google-lro", State.SUCCEEDED, "resolved by the provider's own token: a retry under"),
        ("mistral-batch", State.SUCCEEDED, "resolved by a server-side filter on our reference"),
        ("vertex-batch", State.SUCCEEDED, "resolved by a server-side filter on our reference"),
        ("openai-batch", State.SUCCEEDED, "resolved by a bounded scan of a listing"),
        ("replicate", State.NEEDS_HUMAN, "not resolved: the provider offers no way to find"),
        ("openai-responses", State.NEEDS_HUMAN, "not resolved: the provider offers no way"),
    ],
)
async def test_each_tier_resolves_a_lost_create_answer_and_explain_says_which(
    name: str, state: State, words: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One lost create answer per tier: one job at the provider, the operation where the
    tier takes it, and explain's `reconciled:` line naming the tier."""
    async with vendor_rig(name, name, tmp_path, monkeypatch) as rig:
        rig.faults(drop_create_answer=1)
        op = await rig.finish(await rig.submit())
        assert op.state is state, op
        assert rig.created() == 1
        if state is State.NEEDS_HUMAN:
            assert rig.create_calls() == 1  # in doubt: nothing is sent again on its own
        assert f"reconciled: a create answer was lost{'' if 'not' in words else '; '}" in (
            text := await told(rig, op.operation_id)
        )
        assert words in text


async def _other_batches(rig: Rig, n: int) -> None:
    """`n` batches of somebody else's, each a second newer than the last."""
    url = f"{rig.h.sim.base_url}/openai/v1/batches"
    body = {"input_file_id": "file-x", "endpoint": "/v1/chat/completions"}
    async with aiohttp.ClientSession() as session:
        for _ in range(n):
            rig.h.clock.advance(1)
            headers = {"Authorization": f"Bearer {SECRET}"}
            async with session.post(
                url, json={**body, "completion_window": "24h"}, headers=headers
            ) as r:
                assert r.status == 200, await r.text()


def _scan(rig: Rig, *, limit: int, pages: int) -> None:
    """The profile's listing with small pages, so a short listing is longer than the cap."""
    doc: dict[str, Any] = dict(rig.h.spec.document)
    listing = dict(doc["reconcile"]["list"])
    listing["path"] = f"/v1/batches?limit={limit}"
    doc["reconcile"] = {"list": {**listing, "pages": pages}}
    rig.h.spec = parse_provider(doc)


async def test_a_scan_finds_the_batch_past_its_first_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three newer batches of others push ours to the second page of two: the scan follows
    `after` = `last_id` while `has_more`, finds it, and the batch is collected once."""
    async with vendor_rig("openai-batch", "scan", tmp_path, monkeypatch, shared_clock=True) as rig:
        _scan(rig, limit=2, pages=3)
        rig.faults(drop_create_answer=1)
        op = await rig.submit()
        await rig.h.tick()  # the create is sent and its answer lost
        assert (await rig.h.op(op)).state is State.CREATE_UNKNOWN
        await _other_batches(rig, 3)
        op = await rig.finish(op)
        assert op.state is State.SUCCEEDED, op
        assert rig.created() == 4 and rig.create_calls() == 4  # ours once, and the 3 others
        lists = [c.path for c in rig.h.sim.vendors.calls if c.kind == "list"]
        assert lists[:2] == ["/openai/v1/batches?limit=2", lists[1]] and "after=" in lists[1]
        assert "resolved by a bounded scan of a listing: the lookup found job" in await told(
            rig, op.operation_id
        )


async def test_a_scan_stopped_at_its_cap_stops_in_doubt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Five newer batches and a cap of two pages of two: the scan never reaches back to the
    create, so its miss proves nothing. The operation stops for a person (lookup_capped),
    the create is never sent again, and explain says why."""
    async with vendor_rig("openai-batch", "cap", tmp_path, monkeypatch, shared_clock=True) as rig:
        _scan(rig, limit=2, pages=2)
        rig.faults(drop_create_answer=1)
        op = await rig.submit()
        await rig.h.tick()
        await _other_batches(rig, 5)
        op = await rig.finish(op)
        assert op.state is State.NEEDS_HUMAN, op
        (last,) = (await rig.h.history(op))[-1:]
        assert last.evidence is Evidence.LOOKUP_CAPPED
        ours = [c for c in rig.h.sim.vendors.calls if c.kind == "create" and c.status is None]
        assert len(ours) == 1  # the lost one, never sent again
        lists = [c for c in rig.h.sim.vendors.calls if c.kind == "list"]
        assert len(lists) == 2  # the cap: two pages, in one lookup
        attempts = await rig.h.rt.ledger.store.attempts(op.operation_id)
        (lookup,) = [a for a in attempts if a.kind.value == "reconcile"]
        assert lookup.detail["scanned"]["pages"] == 2
        assert "stopped at its cap of 2 page(s)" in lookup.detail["error"]
        assert "the scan of the listing stopped at its cap" in await told(rig, op.operation_id)


async def test_a_scan_that_reaches_jobs_older_than_the_create_is_complete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches made an hour before the operation fill the listing: the first page reaches
    back past the create, so the scan ends there, having seen every batch that could be
    ours (no cap reached), and ours on it is found."""
    async with vendor_rig("openai-batch", "old", tmp_path, monkeypatch, shared_clock=True) as rig:
        _scan(rig, limit=3, pages=1)
        await _other_batches(rig, 4)
        rig.h.clock.advance(3600)
        rig.faults(drop_create_answer=1)
        op = await rig.finish(await rig.submit())
        assert op.state is State.SUCCEEDED, op
        assert len([c for c in rig.h.sim.vendors.calls if c.kind == "list"]) == 1
