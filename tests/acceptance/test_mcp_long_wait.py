"""MCP that outlives a client's timeout: an agent on the official SDK client (a 60-second
request timeout, no Tasks) follows a job longer than its waits through repeated bounded
`wait_job` calls, told to call again each time, with progress notifications while each call
waits, across a SIGKILL of the server: the operation id, and the resource
jobtrail://operations/{id}, are the same handle throughout."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import Implementation

from jobtrail.simulator import SimulatorThread

from mcptasks import SECRET, provider_folder, stdio_server, submit
from waits import until_true_async

BOUND = 2.0  # seconds each wait may take: short, so the test does not take minutes


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[SimulatorThread]:
    with SimulatorThread(token=SECRET) as simulator:
        provider_folder(tmp_path / "providers", simulator.base_url)
        yield simulator


def client(tmp_path: Path) -> Client:
    return Client(
        stdio_server(tmp_path, tmp_path / "providers", "--lease", "2s"),
        client_info=Implementation(name="plain-agent", version="1"),
        read_timeout_seconds=60,
    )


class Waits:
    """Repeated wait_job calls, each with a progress callback; what they answered."""

    def __init__(self) -> None:
        self.progress: list[tuple[float, float | None, str | None]] = []
        self.answers: list[dict[str, Any]] = []

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress.append((progress, total, message))

    async def once(self, c: Client, op_id: str) -> dict[str, Any]:
        result = await c.call_tool(
            "wait_job",
            {"operation_id": op_id, "timeout_seconds": BOUND},
            progress_callback=self.on_progress,
        )
        assert not result.is_error, result.content
        answer = result.structured_content
        assert answer is not None and SECRET not in str(answer)
        self.answers.append(answer)
        return answer


async def collect(c: Client, uri: str, into: list[Any], listening: asyncio.Event) -> None:
    """The updates of `uri` heard on a `subscriptions/listen` stream, until cancelled."""
    async with c.listen(resource_subscriptions=[uri]) as stream:
        listening.set()
        async for event in stream:
            into.append(event)


async def resource(c: Client, op_id: str) -> dict[str, Any]:
    """The operation read as the resource jobtrail://operations/{id}."""
    read = await c.read_resource(f"jobtrail://operations/{op_id}")
    (content,) = read.contents
    document: dict[str, Any] = json.loads(getattr(content, "text", ""))
    assert SECRET not in str(document)
    return document


@pytest.mark.slow
async def test_a_long_job_is_followed_through_bounded_waits_across_a_sigkill(
    tmp_path: Path, sim: SimulatorThread
) -> None:
    """Each wait answers within its bound with call_again and an instruction naming the
    operation; progress notifications arrive while it waits; after the server is killed and
    started again, the same operation id is waited on to its result; one job was made."""
    waits = Waits()
    with pytest.raises(BaseException):  # noqa: B017 - the session dies with its server
        async with client(tmp_path) as c:
            sent = await c.call_tool("submit_job", submit({"account": "w1", "_sim": {
                "duration_seconds": 12}}, "long-wait"))  # fmt: skip
            assert sent.structured_content is not None
            op_id = sent.structured_content["operation_id"]
            while waits.answers[-1:] == [] or waits.answers[-1]["remote_job_id"] is None:
                await waits.once(c, op_id)
            before_kill = await resource(c, op_id)
            os.kill(int((tmp_path / "server.pid").read_text()), signal.SIGKILL)
            await waits.once(c, op_id)
    before = len(waits.answers)
    uri = f"jobtrail://operations/{op_id}"
    updates: list[Any] = []
    async with client(tmp_path) as c:
        listening = asyncio.Event()
        listener = asyncio.create_task(collect(c, uri, updates, listening))
        await asyncio.wait_for(listening.wait(), 30)
        state_then = (await resource(c, op_id))["state"]
        for _ in range(60):
            answer = await waits.once(c, op_id)
            if not answer["call_again"]:
                break
        await until_true_async(lambda: len(updates) >= 1, 10, "a resource update")
        listener.cancel()
        result = await c.call_tool("get_result", {"operation_id": op_id})
        after = await resource(c, op_id)
        templates = await c.list_resource_templates()
    assert answer["state"] == "succeeded" and answer["instruction"].startswith("automation has")
    assert len(waits.answers) - before >= 2  # the job outlived waits after the restart too
    going = [a for a in waits.answers if a["call_again"]]
    assert going and all(
        "call wait_job again" in a["instruction"] and op_id in a["instruction"] for a in going
    )
    assert all(a["waited_seconds"] <= BOUND + 1.5 for a in waits.answers)
    assert waits.progress and all(total == BOUND for _, total, _ in waits.progress)
    assert any(message and "next:" in message for _, _, message in waits.progress)
    assert result.structured_content is not None and result.structured_content["valid"]
    assert len(sim.jobs) == 1
    # the same operation, as a resource, under the same address before and after the kill
    assert [t.uri_template for t in templates.resource_templates] == [
        "jobtrail://operations/{operation_id}"
    ]
    assert before_kill["operation_id"] == after["operation_id"] == op_id
    assert before_kill["remote_job_id"] == after["remote_job_id"] is not None
    assert after["state"] == "succeeded" and after["has_result"]
    # updates of this resource only, at most one per state change since the listen began
    assert all(getattr(u, "uri", None) == uri for u in updates)
    changes = [t for t in after["recent_transitions"] if t["from_state"] != "create_pending"]
    assert state_then != "succeeded" and 1 <= len(updates) <= len(changes)
    assert len([call for call in sim.calls if call.kind == "create"]) == 1
