"""The census of Step Functions (a code provider's own listing: ListExecutions) against
moto's server on loopback: executions planted behind jobtrail's back are found in their
categories by their name (our token), none is falsely a second job, a listing cut short by
the census's cap says how far it got, and each page is a recorded, redacted call."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from aws_rig import ENV, ROLE, DroppingProxy, Rig, aws_env, moto_endpoint, rig, sfn_settings

from jobtrail.core.census import Category, Sight
from jobtrail.core.states import State
from jobtrail.providers.aws import stepfunctions
from jobtrail.services.census import Census, take_census
from jobtrail.services.census_actions import adopt_job

__all__ = ["aws_env", "moto_endpoint"]  # fixtures used by name below

SLOW = {"StartAt": "Hold", "States": {"Hold": {"Type": "Wait", "Seconds": 3600, "End": True}}}
UNKNOWN = "idem_" + "Q" * 32  # our token's shape, held by no operation


@pytest.fixture
def sfn(aws_env: str) -> Any:
    return boto3.client("stepfunctions", endpoint_url=aws_env)


def machine(sfn: Any, name: str) -> str:
    made = sfn.create_state_machine(name=name, definition=json.dumps(SLOW), roleArn=ROLE)
    return str(made["stateMachineArn"])


def plant(sfn: Any, arn: str, name: str) -> str:
    """An execution started behind jobtrail's back, under `name`."""
    return str(sfn.start_execution(stateMachineArn=arn, name=name, input="{}")["executionArn"])


async def census_of(r: Rig, **options: Any) -> Census:
    return await take_census(r.rt.ledger, r.rt.providers, r.spec, actor="person:alice", **options)


def ids(census: Census, category: Category) -> set[str]:
    return {f.job.job_id for f in census.of(category)}


async def test_every_planted_execution_is_found_in_its_category(
    tmp_path: Path, sfn: Any, aws_env: str, request: pytest.FixtureRequest
) -> None:
    """Followed, ended here (result deadline passed while the execution waits), unknown
    here (our token's shape, no operation), a second job (an operation's name started on
    this machine while it follows its execution on another), not ours (any other name)."""
    suffix = f"{abs(hash(request.node.nodeid)) % 10**8}"
    here, elsewhere = machine(sfn, f"census-{suffix}"), machine(sfn, f"other-{suffix}")
    db = tmp_path / "ledger.db"
    async with rig(tmp_path, stepfunctions.factory, sfn_settings(aws_env, elsewhere), db=db) as r:
        twice = await r.until(await r.submit({"n": 0}), State.OBSERVING)
    async with rig(tmp_path, stepfunctions.factory, sfn_settings(aws_env, here), db=db) as r:
        ended = await r.submit({"n": 1}, result_deadline=timedelta(seconds=30))
        ended = await r.until(ended, State.RESULT_TIMED_OUT)
        followed = await r.until(await r.submit({"n": 2}), State.OBSERVING)
        unknown = plant(sfn, here, UNKNOWN)
        second = plant(sfn, here, twice.idempotency_token)
        others = {plant(sfn, here, f"nightly-{n}") for n in range(2)}

        census = await census_of(r)

        assert census.sight is Sight.LISTING and census.reach.complete, census.reach
        assert census.sees.startswith("every execution of the state machine (ListExecutions")
        assert ids(census, Category.FOLLOWED) == {followed.remote_job_id}
        assert ids(census, Category.ENDED_HERE) == {ended.remote_job_id}
        assert ids(census, Category.UNKNOWN_HERE) == {unknown}
        assert ids(census, Category.SECOND_JOB) == {second}
        assert {f.operation_id for f in census.of(Category.SECOND_JOB)} == {twice.operation_id}
        assert ids(census, Category.NOT_OURS) == others
        rows = [json.loads(row.entry) for row in await r.rt.ledger.audit_rows()]
        calls = [row["data"] for row in rows if row["kind"] == "census.call"]
        assert [c["request"]["action"] for c in calls] == ["ListExecutions"]
        assert calls[0]["outcome"] == "found" and calls[0]["request"]["stateMachineArn"] == here
        assert ENV["AWS_SECRET_ACCESS_KEY"] not in json.dumps(rows)


async def test_an_unknown_execution_adopted_from_the_census_is_followed(
    tmp_path: Path, sfn: Any, aws_env: str, request: pytest.FixtureRequest
) -> None:
    """Adopting an unknown-here execution reads its status through the code provider and
    records an operation for it: the next census calls it followed, by that operation."""
    arn = machine(sfn, f"adopt-{abs(hash(request.node.nodeid)) % 10**8}")
    async with rig(tmp_path, stepfunctions.factory, sfn_settings(aws_env, arn)) as r:
        unknown = plant(sfn, arn, UNKNOWN)
        assert ids(await census_of(r), Category.UNKNOWN_HERE) == {unknown}

        op = await adopt_job(
            r.rt.ledger, r.rt.providers, r.spec, unknown, actor="person:alice", reason="restored"
        )

        assert op.remote_job_id == unknown and op.state is State.ACCEPTED, op.state
        census = await census_of(r)
        assert ids(census, Category.FOLLOWED) == {unknown}
        assert {f.operation_id for f in census.findings} == {op.operation_id}


async def test_followed_executions_are_never_a_second_job(
    tmp_path: Path, sfn: Any, aws_env: str, request: pytest.FixtureRequest
) -> None:
    """Only jobtrail's own executions, in every state (running, cancelled, ended here): the
    census calls each followed or ended here, and none a second job or unknown here."""
    arn = machine(sfn, f"clean-{abs(hash(request.node.nodeid)) % 10**8}")
    async with rig(tmp_path, stepfunctions.factory, sfn_settings(aws_env, arn)) as r:
        running = [await r.until(await r.submit({"n": n}), State.OBSERVING) for n in range(3)]
        await r.rt.ledger.cancel(running[0].operation_id, actor="alice", reason="not needed")
        await r.until(running[0], State.CANCELLED)

        census = await census_of(r)

        assert census.reach.complete and len(census.findings) == 3
        assert ids(census, Category.FOLLOWED) == {op.remote_job_id for op in running}
        assert not census.of(Category.SECOND_JOB) and not census.of(Category.UNKNOWN_HERE)


async def test_a_listing_cut_short_by_the_cap_says_how_far_it_got(
    tmp_path: Path, sfn: Any, aws_env: str, request: pytest.FixtureRequest
) -> None:
    """One execution a page, two pages allowed, four executions: two listed, and the
    census says it stopped at its cap and older executions were not seen."""
    arn = machine(sfn, f"long-{abs(hash(request.node.nodeid)) % 10**8}")
    for n in range(4):
        plant(sfn, arn, f"idem_{n:032d}")
    async with rig(tmp_path, stepfunctions.factory, sfn_settings(aws_env, arn)) as r:
        r.rt.providers.code_provider(r.spec).list_page = 1  # type: ignore[attr-defined]

        census = await census_of(r, max_requests=2)

        assert not census.reach.complete and census.reach.requests == 2
        assert len(census.findings) == 2
        assert census.reach.words() == (
            "2 listing requests, 2 jobs listed: cut short, at the census's cap of 2 listing "
            "requests; older jobs were not seen"
        )


async def test_a_throttled_listing_stops_the_census_where_it_is(
    tmp_path: Path, sfn: Any, aws_env: str, request: pytest.FixtureRequest
) -> None:
    """ListExecutions answered ThrottlingException: nothing more is sent, and the census
    says the listing was not answered, the call recorded with its outcome."""
    arn = machine(sfn, f"busy-{abs(hash(request.node.nodeid)) % 10**8}")
    proxy = DroppingProxy(aws_env)
    endpoint = await proxy.start()
    throttled = {"__type": "ThrottlingException", "message": "Rate exceeded"}
    proxy.fake["ListExecutions"] = (400, throttled)
    try:
        async with rig(tmp_path, stepfunctions.factory, sfn_settings(endpoint, arn)) as r:
            census = await census_of(r)
            assert len(proxy.sent("ListExecutions")) == 1
            assert not census.reach.complete and census.reach.requests == 1
            assert "not answered with a listing" in (census.reach.stopped or "")
            rows = [json.loads(row.entry) for row in await r.rt.ledger.audit_rows()]
            (call,) = [row["data"] for row in rows if row["kind"] == "census.call"]
            assert call["outcome"] == "throttled"
    finally:
        await proxy.close()
