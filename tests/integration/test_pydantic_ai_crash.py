"""A durable Pydantic AI agent (its DBOS integration, on SQLite) killed with SIGKILL while its
tool call is in flight, after the create reached the provider, then started again: DBOS
recovers the workflow, the tool runs again with the same key (`tool_call_key`), follows the
operation its first run recorded, and the agent's answer carries the job's result. One
remote job; the operation's audit shows one create. The agent is the block of
docs/agents.md, run by tests/pydantic_agent.py; a separate `jobtrail worker` drives the
operation, as in a deployment."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobtrail.simulator import SimulatorThread
from jobtrail.store import open_store

from mcptasks import JOBTRAIL, ROOT, SECRET, provider_folder
from waits import until_true

# `make slow` (its own CI step): an agent process SIGKILLed mid-call and started again.
pytestmark = pytest.mark.slow

AGENT = str(ROOT / "tests" / "pydantic_agent.py")


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[tuple[SimulatorThread, dict[str, str]]]:
    """The simulator, its provider folder, and a `jobtrail worker` on tmp_path's ledger."""
    with SimulatorThread(token=SECRET) as sim:
        sim.set_faults(default={"duration_seconds": 3})  # the job outlasts the first run
        providers = provider_folder(tmp_path / "providers", sim.base_url)
        env = {**os.environ, "JOBTRAIL_PROVIDERS": str(providers), "REPORTS_API_TOKEN": SECRET}
        log = tmp_path / "worker.log"
        command = [JOBTRAIL, "--db", str(tmp_path / "l.db"), "worker", "--lease", "5s"]
        with open(log, "wb") as stderr:
            worker = subprocess.Popen(command, env=env, stderr=stderr, cwd=tmp_path)
        try:
            yield sim, env
        finally:
            worker.send_signal(signal.SIGTERM)
            worker.wait(timeout=30)


def start_agent(tmp_path: Path, env: dict[str, str], name: str) -> subprocess.Popen[str]:
    args = [sys.executable, AGENT, str(tmp_path / "l.db"), str(tmp_path / "dbos.sqlite"), "wf-7"]
    with open(tmp_path / f"{name}.log", "w") as stderr:
        return subprocess.Popen(
            args, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True, cwd=tmp_path
        )


def events(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


async def test_a_recovered_workflow_follows_the_operation_its_first_run_recorded(
    tmp_path: Path, deployment: tuple[SimulatorThread, dict[str, str]]
) -> None:
    """SIGKILL mid-tool-call, restart, DBOS recovery: one remote job, one create in the
    audit, and the final answer carries the job's result."""
    sim, env = deployment
    first = start_agent(tmp_path, env, "first")
    until_true(lambda: len(sim.jobs) == 1, 60, lambda: (tmp_path / "first.log").read_text())
    (job,) = sim.jobs.values()
    assert first.poll() is None and job.state != "succeeded", "the tool call is in flight"
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=10)  # reaps it and closes its stdout pipe (no ResourceWarning)

    second = start_agent(tmp_path, env, "second")
    out, _ = second.communicate(timeout=180)
    assert second.returncode == 0, (tmp_path / "second.log").read_text()
    (answer,) = events(out)
    assert "Recovering 1 workflows" in (tmp_path / "second.log").read_text()
    assert answer["answer"].startswith("Here is the report:\nid,status,value\nitem-1,")

    assert list(sim.jobs) == [job.job_id]
    assert len([call for call in sim.calls if call.kind == "create"]) == 1
    store = await open_store(str(tmp_path / "l.db"), create=False)
    try:
        (op,) = await store.list_operations()
        rows = await store.audit_rows(op.operation_id)
    finally:
        await store.close()
    assert job.client_reference == op.operation_id and op.key.startswith("pydantic-ai:wf-7:")
    entries = [json.loads(row.entry) for row in rows]
    creates = [
        e for e in entries if e["kind"] == "attempt.intent" and e["data"]["kind"] == "create"
    ]
    assert len(creates) == 1 and op.state.value == "succeeded"
