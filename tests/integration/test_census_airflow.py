"""The census of the shipped `airflow` profile against a real Apache Airflow 3 server: its
`[census]` listing pages through the DAG runs of every DAG whose id has our token's prefix,
newest first, the run id (the operation's idempotency token) read as our marker. Runs made
by jobtrail and by direct API calls are found where they belong: followed, ended here (the
result deadline passed while the run runs), the run of a create recorded as sent whose
answer never was (planted by a direct trigger under its token), unknown here (a run under a
token no operation holds: a ledger restored from an older backup), adopted and then followed
once; a run under any other id is not listed, and nothing is a second job. A listing cut
short by its cap says how far it got. Marked slow."""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from test_airflow import Rig, rig

from jobtrail.core.census import Category, Sight
from jobtrail.core.model import AttemptKind
from jobtrail.core.states import RemoteStatus, State
from jobtrail.errors import InvalidInput
from jobtrail.services.census import Census, take_census
from jobtrail.services.census_actions import adopt_job

__all__ = ["rig"]  # the fixture used below
pytestmark = pytest.mark.slow
DAG = "jobtrail_slow"  # its task sleeps 600 s: a run stays running through the test
BODY: dict[str, Any] = {"logical_date": None, "conf": {}}


async def census_of(rig: Rig, spec: Any = None) -> Census:
    chosen = spec or rig.spec
    return await take_census(rig.rt.ledger, rig.rt.providers, chosen, actor="person:alice")


def ours(census: Census, made: list[str]) -> dict[str, tuple[Category, str | None]]:
    """The findings of the runs this test made (the server holds other tests' runs too)."""
    return {
        f.job.job_id: (f.category, f.operation_id) for f in census.findings if f.job.job_id in made
    }


def token_shaped() -> str:
    return "idem_" + secrets.token_hex(16)


def stop_all(rig: Rig, made: list[str]) -> None:
    """Free the scheduler: each run would sleep 600 s."""
    for run_id in made:
        rig.server.request("PATCH", f"/api/v2/dags/{DAG}/dagRuns/{run_id}", {"state": "failed"})


def ids(census: Census, category: Category) -> set[str]:
    return {f.job.job_id for f in census.of(category)}


def trigger(rig: Rig, run_id: str) -> str:
    """A run made behind jobtrail's back, by a direct call to Airflow's REST API."""
    body = dict(BODY, dag_run_id=run_id)
    made: dict[str, Any] = rig.server.request("POST", f"/api/v2/dags/{DAG}/dagRuns", body)
    return str(made["dag_run_id"])


async def sent_and_forgotten(rig: Rig) -> str:
    """An operation whose create intent is recorded and whose trigger reaches Airflow (sent
    here by a direct call under its token), its answer recorded nowhere: a worker that died
    right after sending. Its id."""
    op = await rig.submit(DAG)
    claims = await rig.rt.ledger.store.claim_due(
        "doomed-worker", rig.rt.ledger.now(), 10, timedelta(minutes=10)
    )
    (claim,) = [c for c in claims if c.operation.operation_id == op.operation_id]
    held = replace(claim.operation, next_poll_at=claim.was_due)
    request = rig.rt.providers.for_operation(op).describe(AttemptKind.CREATE, held)
    await rig.rt.ledger.begin_call(held, AttemptKind.CREATE, request, "doomed-worker")
    assert trigger(rig, op.idempotency_token) == op.idempotency_token
    return op.operation_id


async def test_each_run_is_found_by_our_run_id_in_its_category(rig: Rig) -> None:
    """Followed, ended here and the run of a create in doubt, each under its operation; a
    token-shaped run no operation holds unknown here; a run under another id not listed; no
    second job."""
    made: list[str] = []
    try:
        ended = await rig.rt.ledger.submit(
            rig.spec,
            BODY,
            path={"dag_id": DAG, "task_id": "work"},
            actor="test-agent",
            result_deadline=timedelta(seconds=8),
        )
        followed = await rig.until(await rig.submit(DAG), State.OBSERVING)
        ended = await rig.until(ended, State.RESULT_TIMED_OUT, timeout=90)
        made += [followed.idempotency_token, ended.idempotency_token]
        doubt = await sent_and_forgotten(rig)
        made.append((await rig.rt.ledger.get(doubt)).idempotency_token)
        made.append(trigger(rig, f"manual__by-hand-{secrets.token_hex(4)}"))
        orphan = trigger(rig, token_shaped())  # our token's shape, no operation's
        made.append(orphan)

        census = await census_of(rig)

        assert census.sight is Sight.LISTING and census.reach.complete, census.reach
        assert census.sees.startswith("every job of its census listing")
        in_doubt = (await rig.rt.ledger.get(doubt)).idempotency_token
        assert ours(census, made) == {
            followed.idempotency_token: (Category.FOLLOWED, followed.operation_id),
            ended.idempotency_token: (Category.ENDED_HERE, ended.operation_id),
            in_doubt: (Category.FOLLOWED, doubt),
            orphan: (Category.UNKNOWN_HERE, orphan),
        }
        assert not census.of(Category.SECOND_JOB)
    finally:
        stop_all(rig, made)
        await asyncio.sleep(0)


async def test_a_run_of_a_restored_ledger_is_unknown_here_then_adopted_and_followed_once(
    rig: Rig,
) -> None:
    """A run under a token no operation holds (its operation lost with a restore) is unknown
    here, its `dag_id` read from the listing; adopted with it, it is followed once, by the
    adopting operation, and the next census says so; never a second job."""
    made: list[str] = []
    try:
        followed = await rig.until(await rig.submit(DAG), State.OBSERVING)
        made.append(followed.idempotency_token)
        orphan = trigger(rig, token_shaped())
        made.append(orphan)

        census = await census_of(rig)

        (found,) = [f for f in census.findings if f.job.job_id == orphan]
        assert found.category is Category.UNKNOWN_HERE
        assert found.job.path == {"dag_id": DAG}
        assert found.job.status is RemoteStatus.RUNNING
        assert not census.of(Category.SECOND_JOB)
        with pytest.raises(InvalidInput, match="dag_id"):  # a status path needs it
            await adopt_job(
                rig.rt.ledger, rig.rt.providers, rig.spec, orphan,
                actor="person:alice", reason="restored from backup",
            )  # fmt: skip
        op = await adopt_job(
            rig.rt.ledger, rig.rt.providers, rig.spec, orphan,
            actor="person:alice", reason="restored from backup",
            path={**found.job.path, "task_id": "work"},
        )  # fmt: skip
        assert op.remote_job_id == orphan and op.request.path["dag_id"] == DAG
        held = await rig.rt.ledger.find_by_remote_job(rig.spec.name, orphan)
        assert held is not None and held.operation_id == op.operation_id

        again = await census_of(rig)

        assert ours(again, made) == {
            followed.idempotency_token: (Category.FOLLOWED, followed.operation_id),
            orphan: (Category.FOLLOWED, op.operation_id),
        }
        assert not again.of(Category.SECOND_JOB)
    finally:
        stop_all(rig, made)
        await asyncio.sleep(0)


async def test_a_listing_cut_short_by_its_cap_says_how_far_it_got(rig: Rig) -> None:
    """One run a page, at most two pages: the census lists the two newest runs, paged by
    `offset`, and says it stopped at its cap, not that it saw every run."""
    made: list[str] = []
    try:
        made += [trigger(rig, token_shaped()) for _ in range(3)]
        census_spec = rig.spec.census
        assert census_spec is not None
        listing = census_spec.listing
        short = replace(listing, pages=2, path=listing.path.replace("limit=100", "limit=1"))
        spec = replace(rig.spec, census=replace(census_spec, listing=short))

        census = await census_of(rig, spec)

        assert not census.reach.complete
        assert (census.reach.requests, census.reach.listed) == (2, 2)
        assert census.reach.stopped == "at the listing's cap of 2 page(s)"
        assert {f.job.job_id for f in census.findings} == set(made[1:])  # newest first
        assert not census.of(Category.SECOND_JOB)
    finally:
        stop_all(rig, made)
        await asyncio.sleep(0)
