"""The code providers follow the provider files' rule for unreadable status answers, on
moto's server behind a loopback proxy: a DescribeExecution or GetQueryExecution answered 200
with something that is not the API's JSON (a proxy's HTML page, `{}`) states no state. The
provider reports what it read; the core counts such answers with refused reads, so the
operation stops in needs_human after [poll] max_refused_reads of them, instead of polling
"remote None" until the result deadline."""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest
from aws_rig import (
    ROLE,
    DroppingProxy,
    athena_settings,
    aws_env,
    moto_endpoint,
    rig,
    sfn_settings,
)

from jobtrail.core.states import Evidence, State
from jobtrail.providers.aws import athena, stepfunctions

__all__ = ["aws_env", "moto_endpoint"]  # fixtures used by name below

ANSWERS = {
    "html": b"<html><body>502 Bad Gateway, but answered 200</body></html>",
    "empty-object": b"{}",
    "empty": b"",
}
WAIT = {"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 3600, "End": True}}}


@pytest.mark.parametrize("answer", ANSWERS.values(), ids=ANSWERS.keys())
async def test_step_functions_unreadable_status_answers_stop_for_a_person(
    tmp_path: Path, aws_env: str, answer: bytes
) -> None:
    """Five unreadable DescribeExecution answers in a row: needs_human, reads_unreadable."""
    sfn = boto3.client("stepfunctions", endpoint_url=aws_env)
    name = f"unreadable-{abs(hash((str(tmp_path), answer))) % 10**8}"
    arn = sfn.create_state_machine(name=name, definition=_json(WAIT), roleArn=ROLE)[
        "stateMachineArn"
    ]
    proxy = DroppingProxy(aws_env)
    endpoint = await proxy.start()
    proxy.fake_raw["DescribeExecution"] = (200, answer)
    try:
        async with rig(tmp_path, stepfunctions.factory, sfn_settings(endpoint, arn)) as r:
            op = await r.submit({"month": "2026-02"})
            done = await r.until(op, State.NEEDS_HUMAN, State.SUCCEEDED, State.RESULT_TIMED_OUT)
            assert done.state is State.NEEDS_HUMAN, done
            history = await r.rt.ledger.store.history(op.operation_id)
            assert history[-1].evidence is Evidence.READS_UNREADABLE
            assert len(proxy.sent("DescribeExecution")) == 5  # [poll] max_refused_reads
    finally:
        await proxy.close()
        for execution in sfn.list_executions(stateMachineArn=arn)["executions"]:
            sfn.stop_execution(executionArn=execution["executionArn"])
        sfn.delete_state_machine(stateMachineArn=arn)


@pytest.mark.parametrize("answer", ANSWERS.values(), ids=ANSWERS.keys())
async def test_athena_unreadable_status_answers_stop_for_a_person(
    tmp_path: Path, aws_env: str, answer: bytes
) -> None:
    """Five unreadable GetQueryExecution answers in a row: needs_human, reads_unreadable."""
    proxy = DroppingProxy(aws_env)
    endpoint = await proxy.start()
    proxy.fake_raw["GetQueryExecution"] = (200, answer)
    try:
        async with rig(tmp_path, athena.factory, athena_settings(endpoint)) as r:
            op = await r.submit({"query": "SELECT 1", "database": "sales"})
            done = await r.until(op, State.NEEDS_HUMAN, State.SUCCEEDED, State.RESULT_TIMED_OUT)
            assert done.state is State.NEEDS_HUMAN, done
            history = await r.rt.ledger.store.history(op.operation_id)
            assert history[-1].evidence is Evidence.READS_UNREADABLE
            assert len(proxy.sent("GetQueryExecution")) == 5
    finally:
        await proxy.close()


def _json(value: object) -> str:
    import json

    return json.dumps(value)
