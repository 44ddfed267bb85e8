"""The census of Bedrock batch inference (a code provider's own listing:
ListModelInvocationJobs, nameContains "jobtrail-") against the simulator's `bedrock-batch`
mode, every request signed with SigV4: jobs planted behind jobtrail's back are found in their
categories by their job name (built from the operation id), none is falsely a second job, and
a listing cut short by the census's cap says how far it got."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from test_aws_bedrock import BODY, Bedrock, aws_credentials, bedrock_rig

from jobtrail.core.census import Category, Sight
from jobtrail.core.states import State
from jobtrail.providers.aws.bedrock import BedrockBatchProvider, job_name
from jobtrail.providers.aws.calls import Answer
from jobtrail.services.census import Census, take_census

__all__ = ["aws_credentials"]  # the fixture used below
pytestmark = pytest.mark.usefixtures("aws_credentials")

UNKNOWN = "jobtrail-op-01JZZZZZZZZZZZZZZZZZZZZZZZ"  # a name jobtrail builds, no operation's


def provider(r: Bedrock) -> BedrockBatchProvider:
    found = r.rt.providers.code_provider(r.spec)
    assert isinstance(found, BedrockBatchProvider)
    return found


async def plant(r: Bedrock, name: str) -> str:
    """A job made at the simulator behind jobtrail's back (signed, as AWS takes it)."""
    params: dict[str, Any] = dict(BODY, jobName=name, clientRequestToken=f"plant-{name}")
    params["roleArn"] = "arn:aws:iam::123456789012:role/bedrock-batch"
    made = await provider(r).calls.invoke("CreateModelInvocationJob", params)
    assert isinstance(made, Answer), made
    return str(made.body["jobArn"])


async def census_of(r: Bedrock, **options: Any) -> Census:
    return await take_census(r.rt.ledger, r.rt.providers, r.spec, actor="person:alice", **options)


def ids(census: Census, category: Category) -> set[str]:
    return {f.job.job_id for f in census.of(category)}


async def test_every_planted_job_is_found_in_its_category(tmp_path: Path) -> None:
    """Followed, ended here (result deadline passed while the job runs), unknown here (a
    name built from an operation id no operation holds), a second job (a followed
    operation's name on another job), not ours (a name jobtrail did not build)."""
    async with bedrock_rig(tmp_path) as r:
        r.faults(duration_polls=1000)
        ended = await r.submit(result_deadline=timedelta(seconds=30))
        ended = await r.until(ended, State.RESULT_TIMED_OUT)
        followed = await r.until(await r.submit(), State.OBSERVING)
        unknown = await plant(r, UNKNOWN)
        second = await plant(r, job_name(followed))
        other = await plant(r, "jobtrail-nightly")
        unseen = await plant(r, "nightly")  # filtered out by nameContains: never listed

        census = await census_of(r)

        assert census.sight is Sight.LISTING and census.reach.complete, census.reach
        assert census.sees.startswith("every batch inference job named by jobtrail")
        assert ids(census, Category.FOLLOWED) == {followed.remote_job_id}
        assert ids(census, Category.ENDED_HERE) == {ended.remote_job_id}
        assert ids(census, Category.UNKNOWN_HERE) == {unknown}
        assert ids(census, Category.SECOND_JOB) == {second}
        assert ids(census, Category.NOT_OURS) == {other}
        assert unseen not in {f.job.job_id for f in census.findings}
        rows = [json.loads(row.entry) for row in await r.rt.ledger.audit_rows()]
        (call,) = [row["data"] for row in rows if row["kind"] == "census.call"]
        assert call["request"]["action"] == "ListModelInvocationJobs"
        assert call["request"]["nameContains"] == "jobtrail-" and call["outcome"] == "found"
        assert "testing-secret-DO-NOT-LEAK" not in json.dumps(rows)


async def test_only_our_own_jobs_are_never_a_second_job(tmp_path: Path) -> None:
    """Jobs jobtrail made, running and stopped: each followed, none a second job."""
    async with bedrock_rig(tmp_path) as r:
        r.faults(duration_polls=1000, cancel_polls=0)
        ops = [await r.until(await r.submit(), State.OBSERVING) for _ in range(3)]
        await r.rt.ledger.cancel(ops[0].operation_id, actor="alice", reason="not needed")
        await r.until(ops[0], State.CANCELLED)

        census = await census_of(r)

        assert ids(census, Category.FOLLOWED) == {op.remote_job_id for op in ops}
        assert not census.of(Category.SECOND_JOB) and not census.of(Category.UNKNOWN_HERE)


async def test_a_listing_cut_short_by_the_cap_says_how_far_it_got(tmp_path: Path) -> None:
    """One job a page, two pages allowed, three jobs: two listed, and the census says so."""
    async with bedrock_rig(tmp_path) as r:
        for n in range(3):
            await plant(r, f"{UNKNOWN[:-1]}{n}")
        provider(r).list_page = 1

        census = await census_of(r, max_requests=2)

        assert not census.reach.complete and census.reach.requests == 2
        assert len(census.of(Category.UNKNOWN_HERE)) == 2
        assert "cut short, at the census's cap of 2 listing requests" in census.reach.words()
