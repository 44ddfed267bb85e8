"""The census of each shipped profile with a listing, against its simulator vendor mode: a
job made behind jobtrail's back is found where it belongs (unknown here where the listing
is scanned; a second job under a followed operation's reference where the provider filters
it), the followed job is followed, and nothing else is ever called a second job."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from census_rig import census_of, ids
from jobtrail.core.census import Category, Sight
from jobtrail.core.model import AttemptKind, evolve
from jobtrail.core.outcomes import Accepted
from jobtrail.core.states import State
from jobtrail.providers.file.config import parse_provider
from vendor_rig import Rig, vendor_rig

ORPHAN = "op_01JZZZZZZZZZZZZZZZZZZZZZZZ"


async def made_behind_our_back(rig: Rig, marker: str) -> str:
    """A create sent by the provider file's own request for an operation under `marker`,
    recorded nowhere: a job jobtrail placed its marker on and does not know."""
    op = await rig.submit()
    probe = evolve(op, operation_id=marker)
    reply = await rig.h.rt.providers.for_operation(op).call(AttemptKind.CREATE, probe)
    assert isinstance(reply.outcome, Accepted), reply
    await rig.h.rt.ledger.cancel(op.operation_id, actor="alice", reason="only a vehicle")
    return reply.outcome.job_id


@pytest.mark.parametrize(
    ("name", "seen"),
    [
        ("openai-batch", Sight.LISTING),
        ("gemini-batch", Sight.LISTING),
        ("mistral-batch", Sight.PER_OPERATION),
        ("vertex-batch", Sight.PER_OPERATION),
    ],
)
async def test_each_profile_with_a_listing_finds_a_planted_job(
    name: str, seen: Sight, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One followed job and one planted job per profile, each in its category."""
    async with vendor_rig(name, "census", tmp_path, monkeypatch) as rig:
        followed = await rig.h.until(await rig.submit(), State.OBSERVING)
        marker = ORPHAN if seen is Sight.LISTING else followed.operation_id
        planted = await made_behind_our_back(rig, marker)

        census = await census_of(rig.h)

        assert census.sight is seen and census.reach.complete, census.reach
        assert ids(census, Category.FOLLOWED) == {followed.remote_job_id}
        category = Category.UNKNOWN_HERE if seen is Sight.LISTING else Category.SECOND_JOB
        assert ids(census, category) == {planted}
        if seen is Sight.LISTING:
            assert not census.of(Category.SECOND_JOB)


async def test_a_long_gemini_listing_stops_at_its_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages of one, a cap of two pages, three planted batches: cut short, and says so."""
    async with vendor_rig("gemini-batch", "census-cap", tmp_path, monkeypatch) as rig:
        doc: dict[str, Any] = dict(rig.h.spec.document)
        listing = dict(doc["reconcile"]["list"])
        doc["reconcile"] = {"list": {**listing, "path": "/v1beta/batches?pageSize=1", "pages": 2}}
        rig.h.spec = parse_provider(doc)
        planted = [await made_behind_our_back(rig, f"{ORPHAN[:-1]}{n}") for n in range(3)]

        census = await census_of(rig.h)

        assert not census.reach.complete and census.reach.requests == 2
        assert "cap of 2 page(s)" in (census.reach.stopped or "")
        assert ids(census, Category.UNKNOWN_HERE) == set(planted[1:])  # newest first


async def test_a_census_asked_per_operation_stops_at_its_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three operations with a job, at most two lookups: the newest two are asked about,
    and the census says how many older ones were not."""
    async with vendor_rig("mistral-batch", "census-lookups", tmp_path, monkeypatch) as rig:
        for _ in range(3):
            await rig.h.until(await rig.submit(), State.OBSERVING)
        census = await census_of(rig.h, max_requests=2)
        assert not census.reach.complete and census.reach.requests == 2
        assert "1 older operation not asked about" in (census.reach.stopped or "")
        assert len(census.of(Category.FOLLOWED)) == 2
