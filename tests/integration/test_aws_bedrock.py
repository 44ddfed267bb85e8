"""Amazon Bedrock batch inference as a code provider (aiobotocore) against the simulator's
`bedrock-batch` mode, which refuses any request not signed with real SigV4 (checked with
botocore's own signer against the test credentials): success, failure, a stop that keeps
the records finished, a lost create answer resolved by the client request token, and the
job's own deadline written from the result deadline."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from aws_rig import ENV, set_env

from jobtrail.clock import VirtualClock
from jobtrail.core.model import Operation
from jobtrail.core.states import State
from jobtrail.errors import InvalidInput
from jobtrail.presentation.explain import explain_text
from jobtrail.providers.aws import bedrock
from jobtrail.providers.code.contract import CodeSpec, declared
from jobtrail.services.runtime import Runtime, runtime
from jobtrail.simulator import Simulator

from harness import tick

pytest.importorskip("aiobotocore")

MODE = "bedrock-batch"
BODY = {
    "modelId": "anthropic.claude-3-haiku-20240307-v1:0",
    "inputDataConfig": {"s3InputDataConfig": {"s3Uri": "s3://jobs-in/prompts.jsonl"}},
    "outputDataConfig": {"s3OutputDataConfig": {"s3Uri": "s3://jobs-out/batch/"}},
}


@dataclass
class Bedrock:
    rt: Runtime
    sim: Simulator
    clock: VirtualClock
    spec: CodeSpec

    async def submit(self, **options: Any) -> Operation:
        options.setdefault("actor", "test-agent")
        return await self.rt.ledger.submit(self.spec, dict(BODY), **options)

    async def run(self, op: Operation) -> Operation:
        await self.rt.worker.run(until_idle=True)
        return await self.rt.ledger.get(op.operation_id)

    async def until(self, op: Operation, *states: State) -> Operation:
        for _ in range(50):
            op = await self.rt.ledger.get(op.operation_id)
            if op.state in states or not await tick(self.rt, self.clock):
                break
        assert op.state in states, op
        return op

    def faults(self, **faults: Any) -> None:
        self.sim.set_vendor_faults(MODE, faults)

    def calls(self, kind: str) -> list[Any]:
        return [c for c in self.sim.vendors.calls if c.mode == MODE and c.kind == kind]


@pytest.fixture
def aws_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env: dict[str, str] = dict(os.environ)
    set_env(env, tmp_path)
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        if name.startswith("AWS_"):
            monkeypatch.setenv(name, value)


@asynccontextmanager
async def bedrock_rig(tmp_path: Path) -> AsyncIterator[Bedrock]:
    clock = VirtualClock()
    sim = Simulator(token="unused", clock=lambda: clock.now().timestamp())
    base = await sim.start()
    sim.vendors.aws_keys[ENV["AWS_ACCESS_KEY_ID"]] = ENV["AWS_SECRET_ACCESS_KEY"]
    settings = {
        "endpoint_url": f"{base}/bedrock",
        "s3_endpoint_url": f"{base}/bedrock-s3",
        "role_arn": "arn:aws:iam::123456789012:role/bedrock-batch",
        "timeout": "5s",
    }
    provider = bedrock.factory(settings)
    try:
        async with runtime(
            str(tmp_path / "ledger.db"),
            tmp_path / "data",
            worker_id="worker-1",
            lease_for=timedelta(seconds=60),
            clock=clock,
            idle_poll=24 * 3600,
            providers=[provider],
        ) as rt:
            spec = declared(provider, settings, "tests")
            yield Bedrock(rt=rt, sim=sim, clock=clock, spec=spec)
    finally:
        await provider.close()
        await sim.close()


pytestmark = pytest.mark.usefixtures("aws_credentials")


async def test_a_job_that_completes_is_collected_from_its_s3_output(tmp_path: Path) -> None:
    """Created with the token and the deadline, polled, its output file read through S3 (both
    signed): succeeded, the records by recordId, the record counts kept as usage."""
    async with bedrock_rig(tmp_path) as r:
        r.faults(failed_items=1)
        op = await r.run(await r.submit())
        assert op.state is State.SUCCEEDED, op
        assert op.result is not None and op.result.valid and op.result.items is not None
        assert (op.result.items.succeeded, op.result.items.failed) == (2, 1)
        assert op.result.items.failed_refs == ("CALL0000003",)
        assert op.usage == {
            "records": 3,
            "processed_records": 3,
            "succeeded_records": 2,
            "failed_records": 1,
        }
        job = r.sim.vendors.jobs[MODE][op.remote_job_id.rpartition("/")[2]]  # type: ignore[union-attr]
        assert job.body["clientRequestToken"] == bedrock.client_token(op.idempotency_token)
        assert job.body["timeoutDurationInHours"] == 72  # the result deadline, in hours
        assert [c.status for c in r.calls("result")] == [200]
        assert all(c.auth_valid for c in r.sim.vendors.calls if c.mode == MODE)


async def test_a_request_not_signed_with_the_right_key_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mode checks the SigV4 signature itself: a wrong secret is refused (403), nothing
    is made, and the create is reported as refused, never as a job."""
    async with bedrock_rig(tmp_path) as r:
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
        op = await r.run(await r.submit())
        assert op.state is State.FAILED, op
        assert r.sim.vendor_summary(MODE)["jobs_created"] == 0
        (attempt,) = await r.rt.ledger.store.attempts(op.operation_id)
        assert "InvalidSignatureException" in attempt.detail["error"]


async def test_a_failed_job_keeps_bedrocks_message(tmp_path: Path) -> None:
    """A job Bedrock fails ends `failed`, with its message as the provider's reason."""
    async with bedrock_rig(tmp_path) as r:
        r.faults(outcome="failed")
        op = await r.run(await r.submit())
        assert op.state is State.FAILED, op
        attempts = await r.rt.ledger.store.attempts(op.operation_id)
        errors = [a.detail["provider_error"] for a in attempts if "provider_error" in a.detail]
        assert errors and errors[-1]["code"] == "Failed"


async def test_a_stopped_job_keeps_the_records_it_finished(tmp_path: Path) -> None:
    """StopModelInvocationJob once; `Stopping` is not taken for the end; `Stopped` is
    cancelled, and the records finished before it are collected, marked partial."""
    async with bedrock_rig(tmp_path) as r:
        r.faults(duration_polls=50, cancel_polls=2, in_flight_items=2)
        op = await r.until(await r.submit(), State.OBSERVING)
        await r.rt.ledger.cancel(op.operation_id, actor="test", reason="not needed")
        op = await r.run(op)
        assert op.state is State.CANCELLED, op
        assert op.result is not None and op.result.valid and op.result.partial
        assert op.result.items is not None and op.result.items.succeeded == 2
        assert len(r.calls("cancel")) == 1
        words = [o.remote_state for o in await r.rt.ledger.store.observations(op.operation_id)]
        assert "Stopping" in words and words[-1] == "Stopped"


async def test_a_lost_create_answer_is_resolved_by_the_client_request_token(
    tmp_path: Path,
) -> None:
    """The first answer is lost after the job was made; the retry under the same token (and
    the same timeoutDurationInHours) is answered with that job: one job, and explain names
    the tier that resolved it."""
    async with bedrock_rig(tmp_path) as r:
        r.faults(drop_create_answer=1)
        op = await r.run(await r.submit())
        assert op.state is State.SUCCEEDED, op
        assert r.sim.vendor_summary(MODE)["jobs_created"] == 1
        creates = r.calls("create")
        assert len(creates) == 2 and creates[0].job_id == creates[1].job_id
        store = r.rt.ledger.store
        told = explain_text(
            op,
            await store.history(op.operation_id),
            await store.attempts(op.operation_id),
            await store.observations(op.operation_id),
            r.clock.now(),
        )
        assert "resolved by the provider's own token" in told
        assert "the remote job stops by itself 72h after it starts" in told


async def test_the_job_stops_by_itself_at_the_deadline_while_jobtrail_is_away(
    tmp_path: Path,
) -> None:
    """With a 30 h result deadline Bedrock is told 30 hours. jobtrail polls once, then is away
    for two days: Bedrock ended the job at its deadline (PartiallyCompleted, the records it
    finished kept), which jobtrail reads as failed with that partial result."""
    async with bedrock_rig(tmp_path) as r:
        r.faults(duration_polls=1000, finished_before_expiry=1)
        op = await r.submit(result_deadline=timedelta(hours=30))
        assert op.request.body["timeoutDurationInHours"] == 30
        op = await r.until(op, State.OBSERVING)
        r.clock.advance(timedelta(hours=29, minutes=59).total_seconds())  # nobody polls
        await r.rt.worker.run(until_idle=True)
        op = await r.rt.ledger.get(op.operation_id)
        assert op.state is State.FAILED and op.remote_state == "PartiallyCompleted", op
        assert op.result is not None and op.result.partial and op.result.items is not None
        assert op.result.items.succeeded == 1
        (job,) = r.sim.vendors.jobs[MODE].values()
        assert job.timed_out and job.ended_ts == job.deadline_ts


async def test_a_deadline_shorter_than_bedrock_accepts_is_not_written(tmp_path: Path) -> None:
    """Bedrock takes 24 to 168 hours: a 6 h result deadline writes none (explain says only a
    cancel stops the job), and a body that sets its own different value is refused."""
    async with bedrock_rig(tmp_path) as r:
        op = await r.submit(result_deadline=timedelta(hours=6))
        assert "timeoutDurationInHours" not in op.request.body
        assert op.request.remote_deadline is None and op.capabilities.remote_deadline
        with pytest.raises(InvalidInput, match="timeoutDurationInHours is written by jobtrail"):
            await r.rt.ledger.submit(r.spec, {**BODY, "timeoutDurationInHours": 48}, actor="a")


async def test_a_create_deadline_past_the_tokens_memory_is_refused(tmp_path: Path) -> None:
    """Retries under one token after Bedrock may have forgotten it could make a second job:
    a create deadline longer than 24 hours is refused at submit."""
    async with bedrock_rig(tmp_path) as r:
        with pytest.raises(InvalidInput, match="longer than the provider remembers"):
            await r.submit(create_deadline=timedelta(hours=25))


def test_the_output_key_follows_bedrocks_layout() -> None:
    """`<output s3Uri>/<job id>/<input file>.out`, and nothing for an input folder."""
    job = {
        "inputDataConfig": {"s3InputDataConfig": {"s3Uri": "s3://in/a/prompts.jsonl"}},
        "outputDataConfig": {"s3OutputDataConfig": {"s3Uri": "s3://out/x/"}},
    }
    arn = "arn:aws:bedrock:us-east-1:123456789012:model-invocation-job/abc123def456"
    assert bedrock.output_key(job, arn) == ("out", "x/abc123def456/prompts.jsonl.out")
    folder = {**job, "inputDataConfig": {"s3InputDataConfig": {"s3Uri": "s3://in/a/"}}}
    assert bedrock.output_key(folder, arn) is None


def test_the_docs_provider_file_builds_the_provider(tmp_path: Path) -> None:
    """docs/aws.md's Bedrock provider file, saved as written, resolves to the code provider
    with the deadline it declares and the settings it gives."""
    import re

    from jobtrail.providers.code.plugins import load_plugins
    from jobtrail.providers.resolve import resolve_provider

    text = (Path(__file__).resolve().parents[2] / "docs" / "aws.md").read_text()
    (block,) = [b for b in re.findall(r"```toml\n(.*?)```", text, re.S) if "aws-bedrock" in b]
    file = tmp_path / "nightly-batch.toml"
    file.write_text(block)
    spec = resolve_provider(str(file), load_plugins(()))
    assert isinstance(spec, CodeSpec) and spec.name == "aws-bedrock-batch"
    assert spec.remote_deadline == bedrock.BedrockBatchProvider.remote_deadline
    assert spec.settings["role_arn"].endswith(":role/bedrock-batch")
    assert spec.capabilities.remote_deadline and spec.capabilities.token_kept_for == 86400
