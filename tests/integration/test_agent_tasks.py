"""MCP Tasks on a real ledger, in-process (the SDK's own client against the server object,
on the 2026-07-28 per-request path): what a task shows while a person must decide, that
tasks/update and tasks/cancel are acknowledged there, and that a task whose operation is
gone fails as a protocol error rather than as the job."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import Request, Result
from pydantic import ConfigDict

from jobtrail.agent.identity import Identity
from jobtrail.agent.server import build_server
from jobtrail.agent.tools import AgentTools
from jobtrail.clock import VirtualClock
from jobtrail.core import outcomes as o
from jobtrail.core.states import State
from jobtrail.ledger import Ledger
from jobtrail.providers.file.config import parse_provider
from jobtrail.store import open_store

from harness import simulator_doc
from mcptasks import tasks_api

API = tasks_api()
SPEC = parse_provider(simulator_doc("http://127.0.0.1:9"))


class Ack(Result):
    model_config = ConfigDict(extra="allow")


class UpdateTask(Request[Any, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: Any
    name_param = "taskId"


CLOCK = VirtualClock()


@pytest.fixture
async def ledger(tmp_path: Path) -> AsyncIterator[Ledger]:
    store = await open_store(str(tmp_path / "l.db"))
    try:
        yield Ledger(store, clock=CLOCK)
    finally:
        await store.close()


def server(ledger: Ledger) -> Any:
    tools = AgentTools(ledger, worker_running=False, find=lambda name: SPEC)
    return build_server(tools, Identity("tester"), task_ttl=None)  # unlimited: ttlMs null


async def test_a_task_waits_for_a_person_as_input_required(ledger: Ledger) -> None:
    """Past its result deadline the operation needs a person: the task is input_required
    with no request for its client, says why, acknowledges tasks/update, and its cancel is
    recorded as the operation's intent."""
    async with Client(server(ledger), extensions=[API.Tasks()]) as c:
        created = await c.session.call_tool(
            "submit_job",
            {"provider": "simulator", "request": {"a": 1}, "key": "k1", "reason": "r"},
            allow_claimed=True,
        )
        assert isinstance(created, API.CreatedTask)
        (op,) = await ledger.store.list_operations()
        await _timed_out(ledger, op.operation_id)
        waiting = await API.get_task(c.session, created.task_id)
        update = {"taskId": created.task_id, "inputResponses": {"nothing": {"action": "accept"}}}
        acked = await c.session.send_request(UpdateTask(params=update), Ack)
        await API.cancel_task(c.session, created.task_id)
        after = await API.get_task(c.session, created.task_id)
    assert waiting.status == "input_required"
    # one outstanding request: an elicitation telling the user what a person must do
    ((key, request),) = waiting.model_extra["inputRequests"].items()
    assert key.startswith("jobtrail-decision-") and request["method"] == "elicitation/create"
    assert "jobtrail explain" in request["params"]["message"]
    assert request["params"]["requestedSchema"] == {"type": "object", "properties": {}}
    assert created.ttl_ms is None and waiting.ttl_ms is None
    assert "result deadline passed" in waiting.status_message
    assert "pollIntervalMs" not in waiting.model_dump(by_alias=True, exclude_none=True)
    assert acked.model_extra == {"resultType": "complete"}
    cancelled = await ledger.get(op.operation_id)
    assert cancelled.cancel_intent is not None
    assert cancelled.cancel_intent.actor == "agent:tester"
    assert after.status == "working" and cancelled.state is State.CANCEL_REQUESTED


async def _timed_out(ledger: Ledger, operation_id: str) -> None:
    """Accepted as a remote job, then past its result deadline (as a worker records it)."""
    (claim,) = await ledger.claim("worker:t", 1, timedelta(seconds=30), only=operation_id)
    op, attempt = await ledger.begin_call(claim.operation, _create(), {"m": "POST"}, "worker:t")
    accepted = o.Accepted(job_id="job_1", remote_state="RUNNING", remote_status=_running())
    op = await ledger.finish_call(op, attempt, accepted, detail={}, actor="worker:t")
    CLOCK.advance(timedelta(days=60).total_seconds())  # past any result deadline
    (claim,) = await ledger.claim("worker:t", 1, timedelta(seconds=30), only=operation_id)
    late = replace(claim.operation, next_poll_at=claim.was_due)
    deadline = o.DeadlinePassed(deadline=o.Deadline.RESULT)
    await ledger.settle(late, deadline, "worker:t", release=True)


def _create() -> Any:
    from jobtrail.core.model import AttemptKind

    return AttemptKind.CREATE


def _running() -> Any:
    from jobtrail.core.states import RemoteStatus

    return RemoteStatus.RUNNING


async def test_a_task_whose_operation_is_gone_fails_as_a_protocol_error(
    ledger: Ledger, tmp_path: Path
) -> None:
    """Only a fault of jobtrail's (the operation removed behind its back, guards dropped)
    makes a task `failed`, with a JSON-RPC error; a job's failure never does."""
    async with Client(server(ledger), extensions=[API.Tasks()]) as c:
        created = await c.session.call_tool(
            "submit_job",
            {"provider": "simulator", "request": {"a": 2}, "key": "gone", "reason": "r"},
            allow_claimed=True,
        )
        conn = sqlite3.connect(tmp_path / "l.db")
        try:
            conn.execute("DROP TRIGGER operations_no_delete")
            conn.execute("DELETE FROM operations")
            conn.commit()
        finally:
            conn.close()
        failed = await API.get_task(c.session, created.task_id)
        with pytest.raises(MCPError):
            await API.follow(c.session, created.task_id)
    assert failed.status == "failed" and failed.error["code"] == -32603
    assert "no longer in this ledger" in failed.status_message
