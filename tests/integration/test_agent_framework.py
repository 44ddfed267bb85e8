"""The long-running agent tool of docs/agents.md, run as written against the simulator:
run again with the same tool call id (as a resuming agent framework does), it follows the
operation the first run recorded and never sends the job twice."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

import jobtrail
from jobtrail import Client
from jobtrail.simulator import Simulator

from waits import until_true_async

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "agent-framework-token-not-a-real-one"

Tool = Callable[..., Awaitable[str]]


def tool_from_docs() -> Tool:
    """`build_report`, defined by executing its block of docs/agents.md."""
    text = (ROOT / "docs" / "agents.md").read_text(encoding="utf-8")
    (source,) = [
        block
        for block in re.findall(r"^```python\n(.*?)^```", text, re.M | re.S)
        if "async def build_report" in block and "DBOSDurability" not in block
    ]
    namespace: dict[str, Any] = {}
    exec(compile(source, "docs/agents.md", "exec"), namespace)
    tool: Tool = namespace["build_report"]
    return tool


@pytest.fixture
async def sim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Simulator]:
    """The simulator, named by the `simulator` profile the tool submits to."""
    monkeypatch.setenv("REPORTS_API_TOKEN", TOKEN)
    simulator = Simulator(token=TOKEN)
    base_url = await simulator.start()
    providers = tmp_path / "providers"
    providers.mkdir()
    profile = (ROOT / "src" / "jobtrail" / "profiles" / "simulator.toml").read_text()
    (providers / "simulator.toml").write_text(
        profile.replace('"http://127.0.0.1:8700"', f'"{base_url}"'), encoding="utf-8"
    )
    monkeypatch.setenv("JOBTRAIL_PROVIDERS", str(providers))
    yield simulator
    await simulator.close()


def client(tmp_path: Path) -> Client:
    return Client(str(tmp_path / "agent.db"), data_dir=tmp_path / "data")


async def test_a_resumed_tool_call_never_sends_twice(tmp_path: Path, sim: Simulator) -> None:
    """A tool call stopped after its job was created, then run again with the same tool
    call id by a new process, returns the same operation's result; one remote job exists."""
    build_report = tool_from_docs()
    call = {"account": "acct_42", "month": "2026-02", "tool_call_id": "call_8fZ2"}
    async with client(tmp_path) as first:  # the process that stops mid-tool
        running = asyncio.create_task(build_report(**call, jt=first))

        async def created() -> bool:
            op = await first.find("tool-call:call_8fZ2")
            return op is not None and op.remote_job_id is not None

        await until_true_async(created, 10, "the first run created its job")
        op = await first.find("tool-call:call_8fZ2")
        assert op is not None
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
    async with client(tmp_path) as resumed:  # the framework resumes and runs the call again
        answer = await build_report(**call, jt=resumed)
        again = await build_report(**call, jt=resumed)  # and once more, after it ended
        other = await build_report(**(call | {"tool_call_id": "call_other"}), jt=resumed)
        final = await resumed.get(op.operation_id)
    assert answer == again and answer.startswith("3 rows (validated: True)")
    assert final.state is jobtrail.State.SUCCEEDED
    jobs = [j for j in sim.jobs.values() if j.client_reference == op.operation_id]
    creates = [c for c in sim.calls if c.kind == "create" and c.client_reference == op.operation_id]
    assert len(jobs) == 1 and len(creates) == 1
    assert other.startswith("3 rows") and len(sim.jobs) == 2  # a new call is a new job
