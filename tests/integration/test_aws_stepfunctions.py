"""The Step Functions provider against moto's server on loopback, which runs the state
machines' ASL (Pass, Wait, Fail) in real time: an execution's output is its result, a failed
one's error and cause reach `explain`, a cancel ends `cancelled` only once DescribeExecution
says ABORTED, and neither a lost StartExecution answer nor a worker killed right after it
ever starts a second execution."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from aws_rig import (
    ENV,
    ROLE,
    DroppingProxy,
    aws_env,
    explain,
    moto_endpoint,
    rig,
    set_env,
    sfn_settings,
)

from jobtrail.core.model import AttemptKind
from jobtrail.core.states import Evidence, State
from jobtrail.errors import KeyConflict
from jobtrail.providers.aws import stepfunctions
from jobtrail.providers.aws.stepfunctions import execution_input, execution_name

__all__ = ["aws_env", "moto_endpoint"]  # fixtures used by name below

RIG = str(Path(__file__).resolve().parent / "aws_rig.py")
MACHINES = {
    "echo": {
        "StartAt": "Report",
        "States": {
            "Report": {
                "Type": "Pass",
                "Parameters": {"month.$": "$.month", "rows": 3},
                "End": True,
            }
        },
    },
    "broken": {
        "StartAt": "NoData",
        "States": {
            "NoData": {"Type": "Fail", "Error": "Report.NoData", "Cause": "no rows for February"}
        },
    },
    "slow": {"StartAt": "Hold", "States": {"Hold": {"Type": "Wait", "Seconds": 3600, "End": True}}},
}


@pytest.fixture
def sfn(aws_env: str) -> Any:
    return boto3.client("stepfunctions", endpoint_url=aws_env)


@pytest.fixture
def machines(sfn: Any, request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    """One fresh state machine of each kind for this test (names unique to the test)."""
    suffix = f"{abs(hash(request.node.nodeid)) % 10**8}"
    arns = {
        kind: sfn.create_state_machine(
            name=f"{kind}-{suffix}", definition=json.dumps(definition), roleArn=ROLE
        )["stateMachineArn"]
        for kind, definition in MACHINES.items()
    }
    yield arns
    for arn in arns.values():
        for execution in sfn.list_executions(stateMachineArn=arn)["executions"]:
            if execution["status"] == "RUNNING":
                sfn.stop_execution(executionArn=execution["executionArn"])
        sfn.delete_state_machine(stateMachineArn=arn)


def executions(sfn: Any, arn: str) -> list[dict[str, Any]]:
    return list(sfn.list_executions(stateMachineArn=arn)["executions"])


async def test_an_execution_output_is_the_collected_result(
    tmp_path: Path, aws_env: str, sfn: Any, machines: dict[str, str]
) -> None:
    """StartExecution under the token's name, DescribeExecution until SUCCEEDED, and the
    execution's output stored and validated as the operation's result."""
    async with rig(tmp_path, stepfunctions.factory, sfn_settings(aws_env, machines["echo"])) as r:
        op = await r.submit({"month": "2026-02"})
        done = await r.until(op, State.SUCCEEDED, State.FAILED, State.NEEDS_HUMAN)
        assert done.state is State.SUCCEEDED
        (execution,) = executions(sfn, machines["echo"])
        assert execution["name"] == execution_name(op.idempotency_token)
        assert done.remote_job_id == execution["executionArn"]
        assert done.result is not None and done.result.valid and done.result.location
        stored = await r.rt.results.read(done.result.location)
        assert json.loads(stored) == {"month": "2026-02", "rows": 3}


async def test_a_failed_execution_keeps_its_error_and_cause_for_explain(
    tmp_path: Path, aws_env: str, machines: dict[str, str]
) -> None:
    """A Fail state ends the operation `failed`, and `explain` says why in AWS's words."""
    async with rig(tmp_path, stepfunctions.factory, sfn_settings(aws_env, machines["broken"])) as r:
        op = await r.submit({"month": "2026-02"})
        done = await r.until(op, State.SUCCEEDED, State.FAILED, State.NEEDS_HUMAN)
        assert done.state is State.FAILED and done.remote_state == "FAILED"
        text = await explain(r, done)
        assert "why:        the provider said Report.NoData: no rows for February" in text


async def test_cancel_ends_cancelled_only_when_the_execution_is_aborted(
    tmp_path: Path, aws_env: str, sfn: Any, machines: dict[str, str]
) -> None:
    """StopExecution is acknowledged (`cancelling`); `cancelled` follows the status read
    that saw ABORTED, and the execution on the server is indeed aborted."""
    async with rig(tmp_path, stepfunctions.factory, sfn_settings(aws_env, machines["slow"])) as r:
        op = await r.submit({"month": "2026-02"})
        await r.until(op, State.OBSERVING)
        await r.rt.ledger.cancel(op.operation_id, actor="alice", reason="wrong month")
        done = await r.until(op, State.CANCELLED, State.CANCELLATION_UNCONFIRMED)
        assert done.state is State.CANCELLED
        path = await r.path(op)
        assert path[-3:] == [State.CANCEL_REQUESTED, State.CANCELLING, State.CANCELLED]
        last = (await r.rt.ledger.store.history(op.operation_id))[-1]
        assert last.evidence is Evidence.OBSERVED_CANCELLED
        (execution,) = executions(sfn, machines["slow"])
        assert execution["status"] == "ABORTED"


async def test_an_acknowledged_stop_that_changed_nothing_is_not_cancelled(
    tmp_path: Path, aws_env: str, sfn: Any, machines: dict[str, str]
) -> None:
    """A StopExecution answered 200 but never carried out (the proxy answers it without
    forwarding) leaves the operation `cancelling` while DescribeExecution says RUNNING."""
    proxy = DroppingProxy(aws_env)
    endpoint = await proxy.start()
    proxy.fake["StopExecution"] = (200, {"stopDate": 0})
    try:
        async with rig(
            tmp_path, stepfunctions.factory, sfn_settings(endpoint, machines["slow"])
        ) as r:
            op = await r.submit({"month": "2026-02"})
            await r.until(op, State.OBSERVING)
            await r.rt.ledger.cancel(op.operation_id, actor="alice", reason="wrong month")
            await r.until(op, State.CANCELLING)
            for _ in range(3):  # three more status reads, each answered RUNNING
                await r.tick()
            still = await r.op(op)
            assert still.state is State.CANCELLING and still.remote_state == "RUNNING"
            assert len(proxy.sent("StopExecution")) == 1
            (execution,) = executions(sfn, machines["slow"])
            assert execution["status"] == "RUNNING"
    finally:
        await proxy.close()


async def test_a_lost_start_answer_is_reconciled_to_the_same_execution(
    tmp_path: Path,
    aws_env: str,
    sfn: Any,
    machines: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """StartExecution reaches the server and starts the execution, but its answer is lost:
    the operation goes through create_unknown, the retry under the same name is resolved
    (ExecutionAlreadyExists, same input), the lookup confirms it, and the server holds one
    execution. botocore retried nothing, even with AWS_MAX_ATTEMPTS asking it to."""
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "5")
    monkeypatch.setenv("AWS_RETRY_MODE", "standard")
    proxy = DroppingProxy(aws_env)
    endpoint = await proxy.start()
    proxy.drop["StartExecution"] = 1
    try:
        async with rig(
            tmp_path, stepfunctions.factory, sfn_settings(endpoint, machines["echo"])
        ) as r:
            op = await r.submit({"month": "2026-02"})
            done = await r.until(op, State.SUCCEEDED, State.FAILED, State.NEEDS_HUMAN)
            assert done.state is State.SUCCEEDED
            path = await r.path(op)
            assert State.CREATE_UNKNOWN in path and State.RECONCILIATION in path
            names = {body["name"] for body in proxy.sent("StartExecution")}
            assert names == {execution_name(op.idempotency_token)}
            assert len(proxy.sent("StartExecution")) >= 2  # the retry went out, same name
            (execution,) = executions(sfn, machines["echo"])
            assert done.remote_job_id == execution["executionArn"]
            # every request, retries and lookups included, is in the operation's one trace
            assert {t and t.split("-")[1] for t in proxy.traceparents} == {op.trace_id}
    finally:
        await proxy.close()


async def test_a_lost_answer_while_running_gets_the_same_execution_back(
    tmp_path: Path, aws_env: str, sfn: Any, machines: dict[str, str]
) -> None:
    """While the execution runs, the same-name retry is answered with that execution
    (StartExecution is idempotent for the same name and input): still one execution."""
    proxy = DroppingProxy(aws_env)
    endpoint = await proxy.start()
    proxy.drop["StartExecution"] = 1
    try:
        async with rig(
            tmp_path, stepfunctions.factory, sfn_settings(endpoint, machines["slow"])
        ) as r:
            op = await r.submit({"month": "2026-02"})
            seen = await r.until(op, State.OBSERVING, State.FAILED, State.NEEDS_HUMAN)
            assert seen.state is State.OBSERVING
            (execution,) = executions(sfn, machines["slow"])
            assert seen.remote_job_id == execution["executionArn"]
            assert execution["status"] == "RUNNING"
    finally:
        await proxy.close()


@pytest.mark.slow  # a worker process SIGKILLed and started again
def test_a_worker_killed_right_after_start_execution_starts_no_second_one(
    tmp_path: Path, aws_env: str, sfn: Any, machines: dict[str, str]
) -> None:
    """A worker SIGKILLed once StartExecution has answered (nothing of the answer recorded):
    the next worker settles the interrupted call as sent, finds the execution by its name
    and collects its output. The server holds exactly one execution."""
    env: dict[str, str] = {}
    set_env(env, tmp_path)
    db, data = tmp_path / "ledger.db", tmp_path / "data"
    done = subprocess.run(
        [
            sys.executable,
            RIG,
            str(db),
            str(data),
            aws_env,
            machines["echo"],
            '{"month": "2026-02"}',
        ],
        env={"PATH": "/usr/bin:/bin", **env, "PYTHONPATH": str(Path(RIG).parents[2] / "src")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    op_id, outcome = done.stdout.split()
    assert outcome == "Accepted"
    assert len(executions(sfn, machines["echo"])) == 1

    async def resume() -> None:
        async with rig(
            tmp_path, stepfunctions.factory, sfn_settings(aws_env, machines["echo"]), db=db
        ) as r:
            before = await r.op(op_id)
            assert before.state is State.CREATE_PENDING and before.inflight_attempt
            final = await r.until(before, State.SUCCEEDED, State.FAILED, State.NEEDS_HUMAN)
            assert final.state is State.SUCCEEDED
            assert (await r.path(final))[1] is State.CREATE_UNKNOWN
            (execution,) = executions(sfn, machines["echo"])
            assert final.remote_job_id == execution["executionArn"]
            assert execution["name"] == execution_name(final.idempotency_token)

    asyncio.run(resume())


async def test_a_changed_input_under_the_same_key_is_refused(
    tmp_path: Path, aws_env: str, machines: dict[str, str]
) -> None:
    """The ledger refuses a changed request under an existing key before anything is sent."""
    async with rig(tmp_path, stepfunctions.factory, sfn_settings(aws_env, machines["echo"])) as r:
        first = await r.submit({"month": "2026-02"}, key="feb-report")
        again = await r.submit({"month": "2026-02"}, key="feb-report")
        assert again.operation_id == first.operation_id
        with pytest.raises(KeyConflict):
            await r.submit({"month": "2026-03"}, key="feb-report")


async def test_a_name_held_by_another_input_is_not_taken_for_ours(
    tmp_path: Path, aws_env: str, sfn: Any, machines: dict[str, str]
) -> None:
    """An execution already holds the operation's name with another input: the create is
    refused with both answers kept, the operation never adopts that execution, and the
    server still holds only the foreign one."""
    async with rig(tmp_path, stepfunctions.factory, sfn_settings(aws_env, machines["echo"])) as r:
        op = await r.submit({"month": "2026-02"})
        foreign = sfn.start_execution(
            stateMachineArn=machines["echo"],
            name=execution_name(op.idempotency_token),
            input=json.dumps({"month": "1999-12"}),
        )["executionArn"]
        done = await r.until(op, State.SUCCEEDED, State.FAILED, State.NEEDS_HUMAN)
        assert done.state is State.FAILED and done.remote_job_id is None
        attempts = await r.rt.ledger.store.attempts(op.operation_id)
        (create,) = [a for a in attempts if a.kind is AttemptKind.CREATE]
        assert "held by an execution with another input" in create.detail["error"]
        assert create.detail["start"]["provider_error"]["code"] == "ExecutionAlreadyExists"
        (execution,) = executions(sfn, machines["echo"])
        assert execution["executionArn"] == foreign
        assert execution_input({"month": "2026-02"}) != json.dumps({"month": "1999-12"})


async def test_after_a_lost_request_a_foreign_execution_under_our_name_is_not_adopted(
    tmp_path: Path, aws_env: str, sfn: Any, machines: dict[str, str]
) -> None:
    """The first StartExecution never reaches the server (the caller cannot know), and an
    execution with another input holds the name: the retry's ExecutionAlreadyExists goes to
    the lookup, which proves none of ours exists; the next create is refused for good.
    The operation ends `failed` without a remote job, and nothing of ours was started."""
    proxy = DroppingProxy(aws_env)
    endpoint = await proxy.start()
    proxy.swallow["StartExecution"] = 1
    try:
        settings = sfn_settings(endpoint, machines["echo"])
        async with rig(tmp_path, stepfunctions.factory, settings) as r:
            op = await r.submit({"month": "2026-02"})
            sfn.start_execution(
                stateMachineArn=machines["echo"],
                name=execution_name(op.idempotency_token),
                input=json.dumps({"month": "1999-12"}),
            )
            done = await r.until(op, State.SUCCEEDED, State.FAILED, State.NEEDS_HUMAN)
            assert done.state is State.FAILED and done.remote_job_id is None
            path = await r.path(op)
            assert path[:3] == [State.CREATE_PENDING, State.CREATE_UNKNOWN, State.RECONCILIATION]
            assert path[-2:] == [State.CREATE_PENDING, State.FAILED]
            (execution,) = executions(sfn, machines["echo"])
            seen = sfn.describe_execution(executionArn=execution["executionArn"])
            assert json.loads(seen["input"]) == {"month": "1999-12"}
    finally:
        await proxy.close()


async def test_no_credential_reaches_the_record(
    tmp_path: Path, aws_env: str, machines: dict[str, str]
) -> None:
    """Nothing the ledger stored for a whole lifecycle holds the AWS secret key."""
    async with rig(tmp_path, stepfunctions.factory, sfn_settings(aws_env, machines["echo"])) as r:
        op = await r.submit({"month": "2026-02"})
        await r.until(op, State.SUCCEEDED, State.FAILED, State.NEEDS_HUMAN)
        text = await explain(r, op)
    secret = ENV["AWS_SECRET_ACCESS_KEY"]
    assert secret not in text
    assert secret.encode() not in (tmp_path / "ledger.db").read_bytes()
