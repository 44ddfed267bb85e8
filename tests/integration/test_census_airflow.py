"""The census of the shipped `airflow` profile against a real Apache Airflow 3 server: DAG
runs are looked up by our run id (the operation's idempotency token), once per operation
the ledger holds. Runs made by jobtrail and by direct API calls are found where they belong:
followed, ended here (the result deadline passed while the run runs), the run of a create
recorded as sent whose answer never was (planted by a direct trigger under its token); a
run under any other id is never seen, and nothing is a second job. Marked slow."""

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
from jobtrail.core.states import State
from jobtrail.services.census import Census, take_census

__all__ = ["rig"]  # the fixture used below
pytestmark = pytest.mark.slow
DAG = "jobtrail_slow"  # its task sleeps 600 s: a run stays running through the test
BODY: dict[str, Any] = {"logical_date": None, "conf": {}}


async def census_of(rig: Rig) -> Census:
    return await take_census(rig.rt.ledger, rig.rt.providers, rig.spec, actor="person:alice")


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
    """Followed, ended here and the run of a create in doubt, each under its operation;
    runs under other ids unseen; no second job, nothing unknown here."""
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
        made.append(trigger(rig, "idem_" + secrets.token_hex(16)))  # our token's shape

        census = await census_of(rig)

        assert census.sight is Sight.PER_OPERATION and census.reach.complete, census.reach
        assert census.sees.startswith("only the jobs of operations this ledger holds")
        by_id = {f.job.job_id: (f.category, f.operation_id) for f in census.findings}
        in_doubt = (await rig.rt.ledger.get(doubt)).idempotency_token
        assert by_id == {
            followed.idempotency_token: (Category.FOLLOWED, followed.operation_id),
            ended.idempotency_token: (Category.ENDED_HERE, ended.operation_id),
            in_doubt: (Category.FOLLOWED, doubt),
        }
        assert census.reach.requests == 3  # one lookup per operation whose create was sent
    finally:
        for run_id in made:  # free the scheduler: each run would sleep 600 s
            rig.server.request("PATCH", f"/api/v2/dags/{DAG}/dagRuns/{run_id}", {"state": "failed"})
        await asyncio.sleep(0)
