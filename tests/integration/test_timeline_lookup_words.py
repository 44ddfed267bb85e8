"""A lookup is named by the tier it used and says what it found (issue 31): a GET of the job
by our token that the provider answers 404 is "lookup by our token ... found no job", never
"lookup by client reference ... found HTTP 404"; a filtered listing is named as one and
names the job it found. The simulator over loopback HTTP, a real ledger, the real worker."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from jobtrail.core.model import AttemptKind
from jobtrail.services.story import read_story

from harness import Harness, harness


def _by_token(doc: dict[str, Any]) -> None:
    """The lookup GETs the job at our token (as Airflow's DAG run is keyed); the simulator
    holds no job under that key, so it answers 404, which this file declares "absent"."""
    doc["reconcile"] = {
        "lookup": {"path": "/v1/jobs/{idempotency_token}", "visible_within": "never"}
    }


@pytest.fixture
async def by_token(
    store_kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Harness]:
    async with harness(tmp_path, monkeypatch=monkeypatch, kind=store_kind, edit=_by_token) as h:
        yield h


async def _told(rig: Harness, operation_id: str) -> tuple[list[str], list[str]]:
    """`explain`'s facts and its timeline, line by line."""
    op = await rig.rt.ledger.get(operation_id)
    told = (await read_story(rig.rt.ledger, op)).text()
    facts, timeline = told.split("\nTimeline\n", 1)
    return facts.splitlines(), timeline.splitlines()


async def _timeline(rig: Harness, operation_id: str) -> list[str]:
    return (await _told(rig, operation_id))[1]


async def test_a_lookup_by_our_token_that_finds_nothing_says_so(by_token: Harness) -> None:
    """The create answer is lost; the lookup by our token is answered 404: the timeline
    names the token tier and says the lookup found no job."""
    rig = by_token
    op = await rig.submit({"account": "a", "_sim": {"drop_create_answer": True}})
    store = rig.rt.ledger.store

    async def looked() -> bool:
        kinds = [a.kind for a in await store.attempts(op.operation_id) if a.outcome]
        return AttemptKind.RECONCILE in kinds

    for _ in range(10):
        if await looked():
            break
        await rig.tick()
    lookup = next(
        a for a in await store.attempts(op.operation_id) if a.kind is AttemptKind.RECONCILE
    )
    assert op.idempotency_token in str(lookup.request) and lookup.http_status == 404
    (line,) = [
        text for text in await _timeline(rig, op.operation_id) if f"({lookup.attempt_id})" in text
    ]
    assert "client reference" not in line and "found HTTP" not in line, line
    assert f"lookup by our token ({lookup.attempt_id}) -> found no job (answered HTTP 404)" in line
    facts, _ = await _told(rig, op.operation_id)
    # the 404 that says "no job" is the lookup's answer, not the reason anything failed
    assert not [text for text in facts if text.startswith("  why:")], facts


async def test_a_filtered_listing_names_the_job_it_found(rig: Harness) -> None:
    """The simulator's own file: a same-token retry, then its listing filtered on our
    reference, which names the job."""
    op = await rig.submit({"account": "a", "_sim": {"drop_create_answer": True}})
    await rig.run()
    op = await rig.op(op)
    assert op.remote_job_id is not None
    lines = await _timeline(rig, op.operation_id)
    found = [text for text in lines if "-> found" in text]
    assert found and all(
        "lookup by a server-side filter on our reference (" in text for text in found
    ), found
    assert (
        found[-1].split(" -> ")[1].startswith(f"found job {op.remote_job_id} (answered HTTP 200)")
    )
