"""MCP Tasks over stdio, as a client built on the official SDK's extension API meets them
(the client of docs/agents.md): a task from creation to completion, to a confirmed cancel,
across a SIGKILL of the server, with the spec's errors, and the plain tools for everyone
who does not declare the extension."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, Implementation
from mcp_types import (
    Result,
    SubscriptionFilter,
    SubscriptionsListenRequest,
    SubscriptionsListenRequestParams,
)

from jobtrail.simulator import SimulatorThread

from mcptasks import JOBTRAIL, SECRET, provider_folder, stdio_server, submit, tasks_api

# `make slow` (its own CI step): MCP server processes, one SIGKILLed, tasks waited for in real time.
pytestmark = pytest.mark.slow

API = tasks_api()


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[SimulatorThread]:
    with SimulatorThread(token=SECRET) as simulator:
        provider_folder(tmp_path / "providers", simulator.base_url)
        yield simulator


def client(tmp_path: Path, *options: str, tasks: bool = True, **kw: Any) -> Client:
    return Client(
        stdio_server(tmp_path, tmp_path / "providers", *options),
        extensions=[API.Tasks()] if tasks else None,
        client_info=Implementation(name="tasks-agent", version="1"),
        **kw,
    )


async def create(c: Client, name: str, arguments: dict[str, Any]) -> Any:
    """The task a tool call answers with (the claimed shape, not resolved)."""
    created = await c.session.call_tool(name, arguments, allow_claimed=True)
    assert isinstance(created, API.CreatedTask), created
    return created


def structured(result: CallToolResult) -> dict[str, Any]:
    assert result.structured_content is not None
    return result.structured_content


async def test_a_task_runs_from_creation_to_its_result(
    tmp_path: Path, sim: SimulatorThread
) -> None:
    """call_tool with the extension gets a task, follows it and returns the tool's final
    answer with the collected result; the task said `working` first and was durable."""
    async with client(tmp_path) as c:
        created = await create(c, "submit_job", submit({"account": "t1"}, "task-1"))
        assert created.status == "working" and created.ttl_ms == 7 * 24 * 3600 * 1000
        assert created.task_id.startswith("task_") and created.poll_interval_ms >= 500
        assert "create_pending" in created.status_message
        final = await API.follow(c.session, created.task_id)
        again = await c.call_tool("submit_job", submit({"account": "t2"}, "task-2"))
    answer = structured(final)
    assert not final.is_error and answer["state"] == "succeeded" and not answer["existing"]
    assert answer["result"]["valid"] is True and answer["result"]["records"] == 3
    assert answer["result"]["content"].startswith("id,status,value\n")
    assert created.task_id not in json.dumps(answer)
    assert answer["operation_id"] not in created.task_id and "task-1" not in created.task_id
    assert structured(again)["state"] == "succeeded"  # resolved transparently by the claim
    assert len(sim.jobs) == 2


async def test_a_cancelled_task_waits_for_the_providers_confirmation(
    tmp_path: Path, sim: SimulatorThread
) -> None:
    """tasks/cancel is acknowledged at once and recorded as the cancel intent; the task shows
    `cancelled` only once the provider confirmed it, and a job that finishes first shows
    `completed`."""
    async with client(tmp_path) as c:
        never = await create(
            c, "submit_job", submit({"a": 1, "_sim": {"never_finish": True}}, "c1")
        )
        ignored = await create(
            c,
            "submit_job",
            submit({"a": 2, "_sim": {"never_finish": True, "cancel": "ignore"}}, "c2"),
        )
        raced = await create(c, "submit_job", submit({"a": 3, "_sim": {"cancel": "race"}}, "c3"))
        for task in (never, ignored, raced):
            await _until_remote_job(c, task.task_id)
        for task in (never, ignored, raced):
            await API.cancel_task(c.session, task.task_id)
        cancelled = await API.follow(c.session, never.task_id)
        late = await API.follow(c.session, raced.task_id)
        unconfirmed = await API.get_task(c.session, ignored.task_id)
        story = await c.call_tool("explain_job", {"operation_id": await _op_of(c, "c2")})
    assert cancelled.is_error and "cancelled" in cancelled.content[0].text
    assert structured(late)["state"] == "succeeded" and not late.is_error
    assert unconfirmed.status == "working" and "cancel" in unconfirmed.status_message
    assert "cancel:     asked by agent:" in structured(story)["explanation"]


async def _until_remote_job(c: Client, task_id: str, limit: float = 20) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        task = await API.get_task(c.session, task_id)
        if not any(word in task.status_message for word in ("create_pending", "create now")):
            return
        time.sleep(0.1)
    raise AssertionError(f"{task_id} never got a remote job")


async def test_a_task_survives_a_sigkill_of_the_server(
    tmp_path: Path, sim: SimulatorThread
) -> None:
    """Killed with SIGKILL after it answered a task, the server starts again and the task
    goes on to its result: one operation, one create sent, one remote job."""
    slow = {"account": "k1", "_sim": {"duration_seconds": 3}}
    options = ("--lease", "2s")
    with pytest.raises(BaseException):  # noqa: B017 - the session dies with its server
        async with client(tmp_path, *options) as c:
            created = await create(c, "submit_job", submit(slow, "killed"))
            await _until_remote_job(c, created.task_id)
            os.kill(int((tmp_path / "server.pid").read_text()), signal.SIGKILL)
            await API.get_task(c.session, created.task_id)
    async with client(tmp_path, *options) as c:
        resumed = await API.get_task(c.session, created.task_id)
        final = await API.follow(c.session, created.task_id)
        listed = await c.call_tool("list_jobs", {})
    assert resumed.task_id == created.task_id and resumed.status in ("working", "completed")
    assert structured(final)["state"] == "succeeded" and structured(listed)["count"] == 1
    creates = [call for call in sim.calls if call.kind == "create"]
    assert len(sim.jobs) == 1 and len(creates) == 1
    audit = _audit(tmp_path)
    assert [e["kind"] for e in audit].count("operation.submitted") == 1
    intents = [e for e in audit if e["kind"] == "attempt.intent"]
    assert [e["data"]["kind"] for e in intents].count("create") == 1


def _audit(tmp_path: Path) -> list[dict[str, Any]]:
    done = subprocess.run(
        [JOBTRAIL, "--db", str(tmp_path / "l.db"), "audit", "verify", "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    import sqlite3

    conn = sqlite3.connect(tmp_path / "l.db")
    try:
        return [json.loads(row[0]) for row in conn.execute("SELECT entry FROM audit_log")]
    finally:
        conn.close()


async def test_wait_job_as_a_task_and_a_failed_job(tmp_path: Path, sim: SimulatorThread) -> None:
    """wait_job on a running operation is a task too; a job that failed at the provider
    completes with an isError tool result (not the `failed` status)."""
    async with client(tmp_path) as c:
        failing = {"a": 1, "_sim": {"outcome": "failed", "duration_seconds": 2}}
        await create(c, "submit_job", submit(failing, "w1"))
        waited = await create(c, "wait_job", {"operation_id": await _op_of(c, "w1")})
        task = await API.get_task(c.session, waited.task_id)
        while task.status == "working":
            time.sleep(0.2)
            task = await API.get_task(c.session, waited.task_id)
        ended = await c.call_tool("wait_job", {"operation_id": await _op_of(c, "w1")})
    assert task.status == "completed" and task.result["isError"] is True
    waited_answer = task.result["structuredContent"]
    assert waited_answer["state"] == "failed" and waited_answer["changed"] is True
    assert not ended.is_error and structured(ended)["state"] == "failed"  # no task: it ended


def _listen_for(task_id: str) -> SubscriptionsListenRequest:
    notifications = SubscriptionFilter.model_validate({"taskIds": [task_id]})
    return SubscriptionsListenRequest(
        params=SubscriptionsListenRequestParams(notifications=notifications)
    )


async def _op_of(c: Client, key: str) -> str:
    listed = structured(await c.call_tool("list_jobs", {}))
    (op_id,) = [j["operation_id"] for j in listed["jobs"] if j["key"] == key]
    return str(op_id)


async def test_errors_of_the_task_methods(tmp_path: Path, sim: SimulatorThread) -> None:
    """An unknown task id is -32602; a client without the extension gets the plain tool and
    -32021 on tasks/*; an expired task is -32602, and prune removes its handle, not its
    operation."""
    async with client(tmp_path, "--no-worker", "--task-ttl", "1s") as c:
        with pytest.raises(MCPError) as unknown:
            await API.get_task(c.session, "task_" + "0" * 64)
        created = await create(c, "submit_job", submit({"a": 1}, "e1"))
        time.sleep(1.2)
        with pytest.raises(MCPError) as expired:
            await API.get_task(c.session, created.task_id)
        with pytest.raises(MCPError) as cancel_expired:
            await API.cancel_task(c.session, created.task_id)
    async with client(tmp_path, "--no-worker", tasks=False) as plain:
        answer = await plain.call_tool("submit_job", submit({"a": 2}, "e2"))
        with pytest.raises(MCPError) as undeclared:
            await API.get_task(plain.session, created.task_id)
        with pytest.raises(MCPError) as listen:
            await plain.session.send_request(_listen_for(created.task_id), Result)
        advertised = plain.server_capabilities.extensions or {}
    async with client(tmp_path, "--no-worker", mode="legacy") as legacy:
        old = await legacy.call_tool("submit_job", submit({"a": 3}, "e3"))
    assert unknown.value.error.code == -32602 and "not found" in unknown.value.error.message
    assert expired.value.error.code == -32602 and "expired" in expired.value.error.message
    assert cancel_expired.value.error.code == -32602
    assert structured(answer)["state"] == "create_pending"
    assert undeclared.value.error.code == -32021 and listen.value.error.code == -32021
    assert undeclared.value.error.data == {
        "requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    }
    assert advertised == {"io.modelcontextprotocol/tasks": {}}
    assert structured(old)["state"] == "create_pending"
    pruned = subprocess.run(
        [
            JOBTRAIL,
            "--db",
            str(tmp_path / "l.db"),
            "prune",
            "--finished-before",
            "1d",
            "--no-archive",
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(pruned.stdout)["expired_tasks"] == 1
    import sqlite3

    conn = sqlite3.connect(tmp_path / "l.db")
    try:
        assert conn.execute("SELECT count(*) FROM task_handles").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM operations").fetchone()[0] == 3
    finally:
        conn.close()
