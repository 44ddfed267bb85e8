"""What was done and what was billed: the counts and usage a provider reports are kept with
the final observation and shown by every surface (`result`, `explain`, the dashboard, the
MCP `get_result`), and summed by `jobtrail list --json`; a partial result (what a cancelled
or expired job finished) is marked partial everywhere, the operation ending in its true
state."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from jobtrail.agent.tools import AgentTools
from jobtrail.core.states import State
from jobtrail.dashboard.operation import facts
from jobtrail.services.story import read_story
from vendor_rig import Rig, vendor_rig

JOBTRAIL = str(Path(sys.executable).with_name("jobtrail"))


def cli(rig: Rig, *args: str) -> Any:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBTRAIL_")}
    env |= {"JOBTRAIL_DB": rig.h.db, "JOBTRAIL_DATA": str(rig.h.data)}
    done = subprocess.run(
        [JOBTRAIL, *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if "--json" in args else done.stdout


async def test_usage_is_kept_with_the_final_observation_and_summed_by_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two Mistral jobs: each one's request counts are on its record and on its terminal
    observation only (running reads change them, so they are not kept there); `result`
    and `explain` show them, `list --json` sums them over the listed operations."""
    async with vendor_rig("mistral-batch", "usage", tmp_path, monkeypatch) as rig:
        rig.faults(failed_items=1)
        first = await rig.finish(await rig.submit())
        second = await rig.finish(await rig.submit())
        assert first.state is State.SUCCEEDED and second.state is State.SUCCEEDED
        expected = {"failed_requests": 1, "requests": 3, "succeeded_requests": 2}
        assert first.usage == expected and second.usage == expected
        seen = await rig.h.rt.ledger.store.observations(first.operation_id)
        assert seen[-1].usage == expected and seen[-1].remote_state == "SUCCESS"
        assert all(o.usage is None for o in seen[:-1])

        listed = cli(rig, "list", "--json")
        assert listed["shown"] == listed["total"] == 2
        assert listed["totals"] == {
            "usage": {"failed_requests": 2, "requests": 6, "succeeded_requests": 4}
        }
        assert cli(rig, "result", first.operation_id, "--json")["usage"] == expected
        shown = cli(rig, "result", first.operation_id)
        assert "failed_requests 1, requests 3, succeeded_requests 2" in shown
        told = cli(rig, "explain", first.operation_id)
        assert "usage:      failed_requests 1, requests 3, succeeded_requests 2" in told


async def test_tokens_reach_the_agent_and_the_dashboard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A background response's token usage is in the MCP `get_result` answer and on the
    dashboard's operation page."""
    async with vendor_rig("openai-responses", "tokens", tmp_path, monkeypatch) as rig:
        op = await rig.finish(await rig.submit())
        assert op.state is State.SUCCEEDED, op
        assert op.usage == {"input_tokens": 120, "output_tokens": 480}
        tools = AgentTools(rig.h.rt.ledger, worker_running=True)
        answer = await tools.get_result(op.operation_id, actor="cli:tester")
        assert answer.usage == op.usage and not answer.partial
        story = await read_story(rig.h.rt.ledger, op)
        page = str(facts(story, story.now))
        assert "input_tokens 120, output_tokens 480" in page


async def test_a_partial_result_is_marked_in_every_surface(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A prediction cancelled while it ran keeps the output it had made: collected and
    valid, marked partial in `result`, `explain`, the dashboard and `get_result`, and the
    operation is `cancelled`, never `succeeded`."""
    async with vendor_rig("replicate", "partial", tmp_path, monkeypatch) as rig:
        rig.faults(duration_polls=50)
        op = await rig.h.until(await rig.submit(), State.OBSERVING)
        await rig.h.rt.ledger.cancel(op.operation_id, actor="test", reason="took too long")
        op = await rig.finish(op)
        assert op.state is State.CANCELLED, op
        assert op.result is not None and op.result.valid and op.result.partial
        assert cli(rig, "result", op.operation_id, "--json")["result"]["partial"] is True
        assert "partial (what the job finished before it ended cancelled)" in cli(
            rig, "explain", op.operation_id
        )
        story = await read_story(rig.h.rt.ledger, op)
        assert "partial: what the job finished before it ended cancelled" in str(
            facts(story, story.now)
        )
        answer = await AgentTools(rig.h.rt.ledger, worker_running=True).get_result(
            op.operation_id, actor="cli:tester"
        )
        assert answer.partial and answer.note.startswith("a PARTIAL result")
        assert answer.content is not None and json.loads(answer.content) == ["The "]


async def test_an_incomplete_response_keeps_its_output_and_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A background response the provider cut short (`incomplete`) is a failure whose output
    so far is collected, partial, with the tokens it used."""
    async with vendor_rig("openai-responses", "cut", tmp_path, monkeypatch) as rig:
        rig.faults(outcome="cancelled")  # ended by the provider, unasked: incomplete
        op = await rig.finish(await rig.submit())
        assert op.state is State.FAILED and op.remote_state == "incomplete", op
        assert op.result is not None and op.result.partial and op.result.valid
        assert op.usage == {"input_tokens": 120, "output_tokens": 64}


@pytest.mark.parametrize(
    ("name", "items"),
    [("mistral-batch", (1, 0)), ("vertex-batch", None), ("openai-batch", (1, 0))],
)
async def test_a_cancelled_job_keeps_what_it_finished(
    name: str, items: tuple[int, int] | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cancelled while running, the job's finished work (Mistral's output file, Vertex's
    outputInfo, OpenAI's output file) is collected, valid and partial, with its per-item
    outcomes where the provider gives them; the operation is `cancelled`."""
    async with vendor_rig(name, f"keep-{name}", tmp_path, monkeypatch) as rig:
        rig.faults(duration_polls=50, cancel_polls=1, in_flight_items=1)
        op = await rig.h.until(await rig.submit(), State.OBSERVING)
        await rig.h.rt.ledger.cancel(op.operation_id, actor="test", reason="not needed")
        op = await rig.finish(op)
        assert op.state is State.CANCELLED, op
        assert op.result is not None and op.result.valid and op.result.partial
        if items is not None:
            assert op.result.items is not None
            assert (op.result.items.succeeded, op.result.items.failed) == items
