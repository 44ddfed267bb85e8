"""`jobtrail mcp` as an agent meets it: the SDK's own client over stdio, a real subprocess,
the provider simulator over loopback HTTP, and a credential only the server's env holds."""

from __future__ import annotations

import getpass
import json
import os
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import LATEST_PROTOCOL_VERSION, CallToolResult, Implementation

from jobtrail.agent.server import SHUTDOWN_GRACE
from jobtrail.simulator import SimulatorThread

ROOT = Path(__file__).resolve().parents[2]
JOBTRAIL = str(ROOT / ".venv" / "bin" / "jobtrail")
SECRET = "sim-secret-7f3a9c2e51d84b06"
CLIENT = "acceptance-agent"
# Who the server says its caller is, without --actor: the login running it (the client's
# own name is never taken for it; issue 19).
SERVER_AGENT = f"agent:{getpass.getuser()}"
TOOLS = {
    "submit_job",
    "get_job",
    "wait_job",
    "cancel_job",
    "get_result",
    "list_jobs",
    "explain_job",
}


@pytest.fixture(scope="module")
def providers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A provider folder whose `reports` provider is a simulator that demands SECRET."""
    folder = tmp_path_factory.mktemp("providers")
    with SimulatorThread(token=SECRET) as sim:
        text = (ROOT / "providers" / "simulator.toml").read_text(encoding="utf-8")
        text = text.replace('"http://127.0.0.1:8700"', json.dumps(sim.base_url))
        text += '\n[poll]\ninitial = "200ms"\ncap = "500ms"\n'
        (folder / "reports.toml").write_text(text, encoding="utf-8")
        yield folder


class Agent:
    """An MCP client session that keeps every tool result it saw."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.seen: list[str] = []

    async def raw(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        result = await self.client.call_tool(name, arguments)
        dump = result.model_dump_json()
        self.seen.append(dump)
        assert SECRET not in dump
        return result

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await self.raw(name, arguments)
        assert not result.is_error, result.content
        content: dict[str, Any] | None = result.structured_content
        assert content is not None
        return content

    async def error(self, name: str, arguments: dict[str, Any]) -> str:
        result = await self.raw(name, arguments)
        assert result.is_error
        (block,) = result.content
        text: str = getattr(block, "text", "")
        assert "Traceback" not in text
        return text

    async def until_ended(self, operation_id: str, limit: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            job = await self.call("wait_job", {"operation_id": operation_id, "timeout_seconds": 5})
            if job["ends_automation"]:
                return job
        raise AssertionError(f"{operation_id} did not end within {limit} s")


@asynccontextmanager
async def agent(
    tmp_path: Path,
    providers: Path,
    *options: str,
    env: dict[str, str] | None = None,
    name: str = CLIENT,
) -> AsyncIterator[Agent]:
    params = StdioServerParameters(
        command=JOBTRAIL,
        args=[
            "--db",
            str(tmp_path / "l.db"),
            "--data-dir",
            str(tmp_path / "data"),
            "mcp",
            *options,
        ],
        env={"JOBTRAIL_PROVIDERS": str(providers), "REPORTS_API_TOKEN": SECRET, **(env or {})},
        cwd=tmp_path,
    )
    async with Client(params, client_info=Implementation(name=name, version="1.0")) as client:
        yield Agent(client)


def submit(request: dict[str, Any], key: str) -> dict[str, Any]:
    return {"provider": "reports", "request": request, "key": key, "reason": "acceptance test"}


async def test_submit_wait_and_read_the_result(tmp_path: Path, providers: Path) -> None:
    """A submitted job runs on the in-process worker, and get_result returns its content."""
    async with agent(tmp_path, providers) as a:
        listed = await a.client.list_tools()
        assert {t.name for t in listed.tools} == TOOLS
        assert all(t.output_schema for t in listed.tools)
        sent = await a.call("submit_job", submit({"account": "a1"}, "feb-report"))
        assert sent["state"] == "create_pending" and sent["existing"] is False
        job = await a.until_ended(sent["operation_id"])
        assert job["state"] == "succeeded"
        assert [t["to_state"] for t in job["recent_transitions"]][-1] == "succeeded"
        result = await a.call("get_result", {"operation_id": sent["operation_id"]})
    assert result["valid"] is True and result["items"]["succeeded"] == 3
    assert result["content"].startswith("id,status,value\nitem-1,succeeded,10")


async def test_large_result_comes_as_path_and_preview(tmp_path: Path, providers: Path) -> None:
    """A result over 64 KB is returned as its stored path and a bounded preview."""
    async with agent(tmp_path, providers) as a:
        sent = await a.call("submit_job", submit({"a": 2, "_sim": {"items": 4000}}, "big"))
        await a.until_ended(sent["operation_id"])
        result = await a.call("get_result", {"operation_id": sent["operation_id"]})
    assert result["size"] > 64 * 1024 and result["content"] is None
    assert result["preview"].startswith("id,status,value") and len(result["preview"]) <= 4096
    assert Path(result["location"]).stat().st_size == result["size"]


async def test_same_key_and_request_return_the_same_operation(
    tmp_path: Path, providers: Path
) -> None:
    """Submitting again with the same key and request returns the existing operation."""
    async with agent(tmp_path, providers, "--no-worker") as a:
        first = await a.call("submit_job", submit({"account": "a3"}, "k-dup"))
        again = await a.call("submit_job", submit({"account": "a3"}, "k-dup"))
        listed = await a.call("list_jobs", {})
    assert again["operation_id"] == first["operation_id"] and again["existing"] is True
    assert listed["count"] == 1


async def test_changed_request_under_a_used_key_is_a_tool_error(
    tmp_path: Path, providers: Path
) -> None:
    """A changed request under a used key is refused as a tool error saying what to do."""
    async with agent(tmp_path, providers, "--no-worker") as a:
        await a.call("submit_job", submit({"account": "a4"}, "k-conflict"))
        text = await a.error("submit_job", submit({"account": "a4-changed"}, "k-conflict"))
        listed = await a.call("list_jobs", {})
    assert "use a new key" in text and "cancel the old operation" in text
    assert listed["count"] == 1


async def test_cancel_records_intent_and_the_provider_confirms(
    tmp_path: Path, providers: Path
) -> None:
    """cancel_job answers cancel_requested; the operation is cancelled only once observed."""
    async with agent(tmp_path, providers) as a:
        sent = await a.call("submit_job", submit({"a": 5, "_sim": {"never_finish": True}}, "k5"))
        op_id = sent["operation_id"]
        job = await a.call("get_job", {"operation_id": op_id})
        while job["state"] not in ("accepted", "observing"):
            job = await a.call("wait_job", {"operation_id": op_id, "timeout_seconds": 5})
        asked = await a.raw("cancel_job", {"operation_id": op_id, "reason": "not needed now"})
        final = await a.until_ended(op_id)
    assert asked.structured_content is not None
    assert asked.structured_content["state"] == "cancel_requested"
    assert "cancelled" not in asked.model_dump_json()
    assert asked.structured_content["cancel_requested_by"] == SERVER_AGENT
    assert final["state"] == "cancelled"


async def test_list_explain_and_the_recorded_actor(tmp_path: Path, providers: Path) -> None:
    """list_jobs and explain_job work, and the server's own identity (not the name the MCP
    client gives itself) is the recorded actor."""
    async with agent(tmp_path, providers, "--no-worker") as a:
        sent = await a.call("submit_job", submit({"account": "a6"}, "k6"))
        listed = await a.call("list_jobs", {"state": "create_pending", "limit": 5})
        none = await a.call("list_jobs", {"state": "succeeded"})
        story = await a.call("explain_job", {"operation_id": sent["operation_id"]})
        job = await a.call("get_job", {"operation_id": sent["operation_id"]})
    assert [j["operation_id"] for j in listed["jobs"]] == [sent["operation_id"]]
    assert listed["jobs"][0]["actor"] == SERVER_AGENT and none["count"] == 0
    assert f"submitted by {SERVER_AGENT}: acceptance test" in story["explanation"]
    assert job["actor"] == SERVER_AGENT and CLIENT not in json.dumps(job)
    assert "waiting for a worker" in job["next_step"]


async def test_actor_option_and_cancel_before_the_create(tmp_path: Path, providers: Path) -> None:
    """--actor names every operation and cancel, always as an agent; a cancel before the create
    is kept as intent."""
    async with agent(tmp_path, providers, "--no-worker", "--actor", "ops:alice") as a:
        sent = await a.call("submit_job", submit({"account": "a7"}, "k7"))
        waited = await a.call(
            "wait_job", {"operation_id": sent["operation_id"], "timeout_seconds": 0.6}
        )
        asked = await a.call("cancel_job", {"operation_id": sent["operation_id"], "reason": "x"})
    assert waited["changed"] is False and waited["state"] == "create_pending"
    assert waited["waited_seconds"] >= 0.5  # it waited its whole timeout, no less
    assert waited["actor"] == "agent:ops:alice"
    assert asked["cancel_requested_by"] == "agent:ops:alice"
    assert asked["state"] == "create_pending" and "withdraw" in asked["next_step"]


async def test_errors_are_tool_results_and_never_show_the_secret(
    tmp_path: Path, providers: Path
) -> None:
    """Bad input is an isError result of one sentence; no result ever carries the credential."""
    async with agent(tmp_path, providers) as a:
        missing = await a.error("get_job", {"operation_id": "op_nope"})
        path = await a.error("submit_job", submit({"a": 1}, "k8") | {"provider": "../../etc/x"})
        unknown = await a.error("submit_job", submit({"a": 1}, "k8") | {"provider": "nobody"})
        sent = await a.call("submit_job", submit({"account": "a8"}, "k8"))
        op_id = sent["operation_id"]
        await a.until_ended(op_id)
        for name in ("get_job", "get_result", "explain_job"):
            await a.call(name, {"operation_id": op_id})
        await a.call("list_jobs", {})
        ended = await a.error("cancel_job", {"operation_id": op_id, "reason": "late"})
    assert "list_jobs shows the operations" in missing
    assert "provider must be the name" in path and "no provider named 'nobody'" in unknown
    assert "there is no running job to cancel" in ended
    transcript = "\n".join(a.seen)
    assert SECRET not in transcript and "Authorization" not in transcript


def test_the_server_exits_by_itself_when_stdin_closes(tmp_path: Path, providers: Path) -> None:
    """Stdin closed after a tool call, the server stops its worker and exits 0 on its own,
    with no signal sent (one the SDK's client would send 2 s later ends it by that signal:
    the server raises SIGTERM again, so its exit status would be -15); its shutdown grace
    fits inside those 2 s."""
    env = {**os.environ, "JOBTRAIL_PROVIDERS": str(providers), "REPORTS_API_TOKEN": SECRET}
    command = [JOBTRAIL, "--db", str(tmp_path / "l.db"), "--data-dir", str(tmp_path / "d")]
    with subprocess.Popen(
        [*command, "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
        text=True,
    ) as server:
        assert server.stdin is not None and server.stdout is not None
        hello = {"protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {}}
        hello["clientInfo"] = {"name": CLIENT, "version": "1.0"}
        for message in (
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "list_jobs", "arguments": {}},
            },
        ):
            server.stdin.write(json.dumps(message) + "\n")
            server.stdin.flush()
        answers = [json.loads(server.stdout.readline()) for _ in range(2)]
        assert [a.get("id") for a in answers] == [1, 2] and "result" in answers[1], answers
        server.stdin.close()
        try:  # a deadline for a server that never exits, not a measure of its speed
            returncode = server.wait(timeout=60)
        finally:
            if server.poll() is None:
                server.kill()
        stderr = server.stderr.read() if server.stderr else ""
    assert returncode == 0, stderr
    assert SHUTDOWN_GRACE < 2  # the SDK's client signals the server 2 s after closing stdin
