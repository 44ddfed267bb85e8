"""The Athena provider against moto's server on loopback: a query's rows are the collected
result, a cancel ends `cancelled` only once Athena says CANCELLED, and after a lost
StartQueryExecution answer the retry carries the same ClientRequestToken (a new token is
never sent). moto does not run queries, fail them or honour the token; what it cannot do is
said in each test."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from aws_rig import DroppingProxy, athena_settings, aws_env, explain, moto_endpoint, rig

from jobtrail.core.model import AttemptKind
from jobtrail.core.states import State
from jobtrail.providers.aws import athena

__all__ = ["aws_env", "moto_endpoint"]  # fixtures used by name below

QUERY = {"query": "SELECT month, total FROM reports", "database": "sales"}


def column(name: str, kind: str) -> dict[str, Any]:
    return {
        "CatalogName": "AwsDataCatalog",
        "SchemaName": "sales",
        "TableName": "reports",
        "Name": name,
        "Label": name,
        "Type": kind,
        "Precision": 0,
        "Scale": 0,
        "Nullable": "NULLABLE",
        "CaseSensitive": True,
    }


def row(*values: str) -> dict[str, Any]:
    return {"Data": [{"VarCharValue": v} for v in values]}


def queue_results(endpoint: str, *rows: dict[str, Any]) -> None:
    """What moto's next query "returns" (it runs none): a SELECT's rows, labels first."""
    result = {
        "rows": [row("month", "total"), *rows],
        "column_info": [column("month", "varchar"), column("total", "bigint")],
    }
    requests.post(
        f"{endpoint}/moto-api/static/athena/query-results",
        json={"region": "us-east-1", "results": [result]},
        timeout=10,
    ).raise_for_status()


@pytest.fixture
def held_queries(aws_env: str) -> Iterator[None]:
    """Queries that stay QUEUED until stopped (moto's state manager, manual progression)."""
    manager = f"{aws_env}/moto-api/state-manager"
    requests.post(
        f"{manager}/set-transition",
        json={
            "model_name": "athena::execution",
            "transition": {"progression": "manual", "times": 10**6},
        },
        timeout=10,
    ).raise_for_status()
    yield
    requests.post(
        f"{manager}/unset-transition", json={"model_name": "athena::execution"}, timeout=10
    ).raise_for_status()


async def test_a_query_rows_are_the_collected_result(tmp_path: Path, aws_env: str) -> None:
    """StartQueryExecution with the token as ClientRequestToken, GetQueryExecution until
    SUCCEEDED, GetQueryResults as JSON columns and rows (the label row dropped)."""
    queue_results(aws_env, row("2026-02", "42"), row("2026-03", "17"))
    proxy = DroppingProxy(aws_env)
    endpoint = await proxy.start()
    try:
        async with rig(
            tmp_path, athena.factory, athena_settings(endpoint, work_group="primary")
        ) as r:
            op = await r.submit(QUERY)
            done = await r.until(op, State.SUCCEEDED, State.FAILED, State.NEEDS_HUMAN)
            assert done.state is State.SUCCEEDED
            (start,) = proxy.sent("StartQueryExecution")
            assert start["ClientRequestToken"] == op.idempotency_token
            assert start["QueryExecutionContext"] == {"Database": "sales"}
            assert done.result is not None and done.result.location
            assert done.result.records == 2 and "record_count" in done.result.checks
            stored = json.loads(await r.rt.results.read(done.result.location))
            assert stored["query_execution_id"] == done.remote_job_id
            assert [c["name"] for c in stored["columns"]] == ["month", "total"]
            assert stored["rows"] == [["2026-02", "42"], ["2026-03", "17"]]
    finally:
        await proxy.close()


async def test_more_rows_than_the_provider_fetches_are_not_collected(
    tmp_path: Path, aws_env: str
) -> None:
    """A result over `max_rows` is never stored cut short: result_unavailable, naming the
    query's OutputLocation (as GetQueryExecution states it), where the whole result is."""
    queue_results(aws_env, row("2026-02", "42"), row("2026-03", "17"))
    settings = athena_settings(aws_env, max_rows=1, output_location="s3://reports/athena/")
    async with rig(tmp_path, athena.factory, settings) as r:
        op = await r.submit(QUERY)
        done = await r.until(op, State.SUCCEEDED, State.RESULT_UNAVAILABLE)
        assert done.state is State.RESULT_UNAVAILABLE and done.result is None
        text = await explain(r, done)
        assert "more than 1 rows" in text and "OutputLocation, s3://reports/athena/" in text


async def test_cancel_ends_cancelled_only_when_athena_says_so(
    tmp_path: Path, aws_env: str, held_queries: None
) -> None:
    """StopQueryExecution is acknowledged (`cancelling`); `cancelled` follows the status
    read that saw CANCELLED."""
    async with rig(tmp_path, athena.factory, athena_settings(aws_env)) as r:
        op = await r.submit(QUERY)
        seen = await r.until(op, State.OBSERVING)
        assert seen.remote_state == "QUEUED"
        await r.rt.ledger.cancel(op.operation_id, actor="alice", reason="wrong table")
        done = await r.until(op, State.CANCELLED, State.CANCELLATION_UNCONFIRMED)
        assert done.state is State.CANCELLED and done.remote_state == "CANCELLED"
        assert (await r.path(op))[-2:] == [State.CANCELLING, State.CANCELLED]


async def test_a_failed_query_keeps_its_reason_for_explain(tmp_path: Path, aws_env: str) -> None:
    """moto never fails a query, so the proxy answers GetQueryExecution as Athena does for a
    failed one: the operation ends `failed` and `explain` gives Athena's reason."""
    proxy = DroppingProxy(aws_env)
    endpoint = await proxy.start()
    failed = {
        "QueryExecution": {
            "QueryExecutionId": "q-1",
            "Status": {
                "State": "FAILED",
                "StateChangeReason": "TABLE_NOT_FOUND: Table sales.reports does not exist",
                "AthenaError": {"ErrorCategory": 2, "ErrorType": 1301, "Retryable": False},
            },
        }
    }
    proxy.fake["GetQueryExecution"] = (200, failed)
    try:
        async with rig(tmp_path, athena.factory, athena_settings(endpoint)) as r:
            op = await r.submit(QUERY)
            done = await r.until(op, State.SUCCEEDED, State.FAILED, State.NEEDS_HUMAN)
            assert done.state is State.FAILED
            text = await explain(r, done)
            assert "AthenaError 1301: TABLE_NOT_FOUND: Table sales.reports does not exist" in text
    finally:
        await proxy.close()


async def test_a_lost_start_answer_is_retried_with_the_same_token(
    tmp_path: Path, aws_env: str
) -> None:
    """StartQueryExecution reaches the server but its answer is lost: the operation goes to
    create_unknown and the retry carries the same ClientRequestToken, the one thing that
    lets Athena return the first query instead of running a second. (moto ignores the token
    and starts a second query; AWS documents that it does not.)"""
    queue_results(aws_env, row("2026-02", "42"))
    proxy = DroppingProxy(aws_env)
    endpoint = await proxy.start()
    proxy.drop["StartQueryExecution"] = 1
    try:
        async with rig(tmp_path, athena.factory, athena_settings(endpoint)) as r:
            op = await r.submit(QUERY)
            done = await r.until(op, State.SUCCEEDED, State.FAILED, State.NEEDS_HUMAN)
            assert done.state is State.SUCCEEDED
            assert State.CREATE_UNKNOWN in await r.path(op)
            tokens = [body["ClientRequestToken"] for body in proxy.sent("StartQueryExecution")]
            assert tokens == [op.idempotency_token, op.idempotency_token]
    finally:
        await proxy.close()


async def test_a_refused_retry_after_a_lost_answer_waits_for_a_human(
    tmp_path: Path, aws_env: str
) -> None:
    """Athena has no lookup: when the same-token retry is refused, nothing can prove that
    the first query did not run, so the operation stops for a human, never `failed`."""
    proxy = DroppingProxy(aws_env)
    endpoint = await proxy.start()
    proxy.drop["StartQueryExecution"] = 1
    refusal = {"__type": "InvalidRequestException", "Message": "Idempotent parameters changed"}
    proxy.fake["StartQueryExecution"] = (400, refusal)
    try:
        async with rig(tmp_path, athena.factory, athena_settings(endpoint)) as r:
            op = await r.submit(QUERY)
            done = await r.until(op, State.SUCCEEDED, State.FAILED, State.NEEDS_HUMAN)
            assert done.state is State.NEEDS_HUMAN and done.remote_job_id is None
            attempts = await r.rt.ledger.store.attempts(op.operation_id)
            creates = [a for a in attempts if a.kind is AttemptKind.CREATE]
            assert len(creates) == 2
            assert creates[1].detail["provider_error"]["code"] == "InvalidRequestException"
    finally:
        await proxy.close()


async def test_a_body_without_a_query_is_refused_before_sending(
    tmp_path: Path, aws_env: str
) -> None:
    """A request Athena cannot be sent is a first-create rejection: `failed`, nothing sent."""
    proxy = DroppingProxy(aws_env)
    endpoint = await proxy.start()
    try:
        async with rig(tmp_path, athena.factory, athena_settings(endpoint)) as r:
            op = await r.submit({"sql": "SELECT 1"})
            done = await r.until(op, State.SUCCEEDED, State.FAILED, State.NEEDS_HUMAN)
            assert done.state is State.FAILED
            assert proxy.sent("StartQueryExecution") == []
    finally:
        await proxy.close()
