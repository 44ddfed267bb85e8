"""MCP over authenticated Streamable HTTP, as agents on other machines meet it: `jobtrail
serve` (and `jobtrail mcp --http`) as subprocesses, the SDK's own HTTP client with the task
client of docs/agents.md, each agent with its own bearer token. Tasks are bound to the
agent whose token opened them, routed by `Mcp-Name`, and survive a SIGKILL of the serve
process that answered them: another serve process on the same PostgreSQL ledger goes on."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, closing, contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from jobtrail.simulator import SimulatorThread

from cliutil import until_healthy
from mcptasks import JOBTRAIL, SECRET, provider_folder, submit, tasks_api
from stores import migrated_ledger
from waits import until_true

# `make slow` (its own CI step): serve processes, one SIGKILLed, tasks waited for in real time.
pytestmark = pytest.mark.slow

API = tasks_api()
ACCEPT = "application/json, text/event-stream"
ALPHA, BETA = "alpha-token-0123456789abcdef", "beta-token-0123456789abcdef"
AGENTS = f"alpha:{ALPHA},beta:{BETA}"


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[SimulatorThread]:
    with SimulatorThread(token=SECRET) as simulator:
        provider_folder(tmp_path / "providers", simulator.base_url)
        yield simulator


def _free_port() -> int:
    with closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(tmp_path: Path, db: str, name: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`jobtrail serve` on `db`, for the agents alpha and beta; yields its URL and process."""
    port, log = _free_port(), tmp_path / f"{name}.log"
    env = {
        **os.environ,
        "JOBTRAIL_PROVIDERS": str(tmp_path / "providers"),
        "REPORTS_API_TOKEN": SECRET,
        "JOBTRAIL_AGENT_TOKENS": AGENTS,
    }
    command = [JOBTRAIL, "--db", db, "--data-dir", str(tmp_path / "data"), "serve"]
    command += ["--port", str(port), "--lease", "2s", "--worker-id", name]
    with open(log, "wb") as stderr:
        proc = subprocess.Popen(command, stderr=stderr, env=env, cwd=tmp_path)
    url = f"http://127.0.0.1:{port}"
    try:
        until_healthy(url, proc, log)
        yield url, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=20)
        assert SECRET not in log.read_text() and ALPHA not in log.read_text()


@asynccontextmanager
async def agent(
    url: str, token: str, *, tasks: bool = True, mode: str = "auto"
) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"},
        timeout=httpx2.Timeout(30, read=300),
    )
    async with http:
        transport = streamable_http_client(f"{url}/mcp", http_client=http)
        extensions = [API.Tasks()] if tasks else None
        async with Client(transport, extensions=extensions, mode=mode) as client:
            yield client


def post(url: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
    request = urllib.request.Request(
        f"{url}/mcp",
        data=json.dumps(body).encode(),
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        | headers,
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def envelope(method: str, params: dict[str, Any]) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        },
    }
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params | {"_meta": meta}}


def modern(method: str, token: str, **headers: str) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {token}",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": method,
        **headers,
    }


async def test_tasks_over_http_are_the_agents_own(tmp_path: Path, sim: SimulatorThread) -> None:
    """Without a valid token /mcp answers 401; with one, a task runs to its result and to a
    confirmed cancel, recorded as that agent's (a request of 400 KB too); another agent's
    token cannot see the task, and a tasks/get whose Mcp-Name names another task is
    refused."""
    with serving(tmp_path, str(tmp_path / "l.db"), "serve-a") as (url, _):
        listing = envelope("tools/list", {})
        assert post(url, listing, {})[0] == 401
        assert post(url, listing, {"Authorization": "Bearer not-a-token-0123456789"})[0] == 401
        async with agent(url, ALPHA) as alpha:
            done = await alpha.call_tool("submit_job", submit({"account": "h1"}, "h1"))
            # past the webhook receiver's body limit, within what a job's request may be
            big = await alpha.call_tool("submit_job", submit({"notes": "n" * 400_000}, "h3"))
            endless = submit({"a": 2, "_sim": {"never_finish": True}}, "h2")
            created = await alpha.session.call_tool("submit_job", endless, allow_claimed=True)
            assert isinstance(created, API.CreatedTask)
            await _until_not_pending(alpha, created.task_id)
            await API.cancel_task(alpha.session, created.task_id)
            cancelled = await API.get_task(alpha.session, created.task_id)
            while cancelled.status == "working":
                time.sleep(0.2)
                cancelled = await API.get_task(alpha.session, created.task_id)
        async with agent(url, BETA) as beta:
            with pytest.raises(MCPError) as foreign:
                await API.get_task(beta.session, created.task_id)
            with pytest.raises(MCPError) as foreign_cancel:
                await API.cancel_task(beta.session, created.task_id)
        get = envelope("tasks/get", {"taskId": created.task_id})
        misrouted = post(url, get, modern("tasks/get", ALPHA, **{"Mcp-Name": "task_other"}))
        routed = post(url, get, modern("tasks/get", ALPHA, **{"Mcp-Name": created.task_id}))
        proxied = modern("tasks/get", ALPHA, **{"Mcp-Name": created.task_id})
        behind_proxy = post(url, get, proxied | {"Host": "jobs.example.com"})
    answer = done.structured_content or {}
    assert answer["state"] == "succeeded" and answer["result"]["valid"] is True
    assert cancelled.status == "cancelled" and not big.is_error
    assert foreign.value.error.code == -32602 and foreign_cancel.value.error.code == -32602
    assert misrouted[0] == 400 and misrouted[1]["error"]["code"] == -32020
    assert routed[0] == 200 and routed[1]["result"]["status"] == "cancelled"
    assert behind_proxy[0] == 200  # a reverse proxy's Host header is not refused
    actors = _actors(tmp_path / "l.db")
    assert actors == {"agent:alpha"}


async def _until_not_pending(c: Client, task_id: str) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        task = await API.get_task(c.session, task_id)
        if "create_pending" not in task.status_message:
            return
        time.sleep(0.1)
    raise AssertionError(f"{task_id} stayed create_pending")


def _actors(db: Path) -> set[str]:
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT entry FROM audit_log").fetchall()
    finally:
        conn.close()
    entries = [json.loads(row[0]) for row in rows]
    return {e["actor"] for e in entries if e["kind"] in ("operation.submitted", "cancel.intent")}


@pytest.mark.postgres
async def test_any_serve_process_goes_on_with_a_task_after_a_sigkill(
    tmp_path: Path, sim: SimulatorThread
) -> None:
    """Two serve processes share one PostgreSQL ledger: a task answered by the first, which
    is then killed with SIGKILL once its create reached the provider, resolves on the second
    and runs to its result. One remote job exists: a create the killed worker may not have
    recorded the answer of is sent again only with the same idempotency token, which the
    provider answers with the same job."""
    slow = {"account": "k1", "_sim": {"duration_seconds": 3}}
    async with migrated_ledger("postgres", tmp_path) as db:
        with serving(tmp_path, db.url, "serve-b") as (second, _):
            with serving(tmp_path, db.url, "serve-a") as (first, proc):
                async with agent(first, ALPHA) as alpha:
                    created = await alpha.session.call_tool(
                        "submit_job", submit(slow, "killed"), allow_claimed=True
                    )
                    assert isinstance(created, API.CreatedTask)
                until_true(lambda: len(sim.jobs) == 1, 20, "the create reached the provider")
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
            async with agent(second, ALPHA) as alpha:
                final = await API.follow(alpha.session, created.task_id)
    assert (final.structured_content or {})["state"] == "succeeded"
    creates = [call for call in sim.calls if call.kind == "create"]
    assert len(sim.jobs) == 1 and len({call.idempotency_key for call in creates}) == 1
    assert {call.job_id for call in creates} == set(sim.jobs)


async def test_mcp_http_serves_the_tools_alone(tmp_path: Path, sim: SimulatorThread) -> None:
    """`jobtrail mcp --http HOST:0` serves /mcp by itself, for the agents of
    JOBTRAIL_AGENT_TOKENS, recording each as itself; a plain client, and a client of the
    2025 handshake protocol even with the extension, get plain answers."""
    env = {
        **os.environ,
        "JOBTRAIL_PROVIDERS": str(tmp_path / "providers"),
        "REPORTS_API_TOKEN": SECRET,
        "JOBTRAIL_AGENT_TOKENS": AGENTS,
    }
    log = tmp_path / "mcp.log"
    command = [JOBTRAIL, "--db", str(tmp_path / "l.db"), "mcp", "--http", "127.0.0.1:0"]
    with open(log, "wb") as stderr:
        proc = subprocess.Popen(command, stderr=stderr, env=env, cwd=tmp_path)
    try:
        until_true(lambda: "serving http://" in log.read_text(), 30, lambda: log.read_text())
        url = log.read_text().split("serving ", 1)[1].split()[0].removesuffix("/mcp")
        async with agent(url, BETA, tasks=False) as beta:
            sent = await beta.call_tool("submit_job", submit({"account": "m1"}, "m1"))
        async with agent(url, BETA, mode="legacy") as legacy:  # a 2025 client: no tasks
            old = await legacy.call_tool("submit_job", submit({"account": "m2"}, "m2"))
        assert post(url, envelope("tools/list", {}), {})[0] == 401
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
    assert (sent.structured_content or {})["state"] == "create_pending"
    assert (old.structured_content or {})["state"] == "create_pending"
    assert _actors(tmp_path / "l.db") == {"agent:beta"}


async def test_serve_sends_resource_updates_on_mcp(tmp_path: Path, sim: SimulatorThread) -> None:
    """`serve`'s /mcp, like `jobtrail mcp`, sends notifications/resources/updated for a
    subscribed operation as its state changes, for that operation's resource only."""
    with serving(tmp_path, str(tmp_path / "l.db"), "serve-u") as (url, _):
        async with agent(url, ALPHA, tasks=False) as alpha:
            job = {"account": "u1", "_sim": {"duration_seconds": 3}}
            sent = await alpha.call_tool("submit_job", submit(job, "u1"))
            op_id = (sent.structured_content or {})["operation_id"]
            uri = f"jobtrail://operations/{op_id}"
            updates: list[Any] = []
            async with asyncio.timeout(60), alpha.listen(resource_subscriptions=[uri]) as stream:
                async for event in stream:  # (a guard against a hang, not a timed assertion)
                    updates.append(event)
                    read = await alpha.read_resource(uri)
                    if '"succeeded"' in getattr(read.contents[0], "text", ""):
                        break
    assert updates and all(getattr(u, "uri", None) == uri for u in updates)
