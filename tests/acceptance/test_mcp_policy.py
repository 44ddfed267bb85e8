"""The action policy as an MCP client meets it: an agent cannot cancel another agent's
operation through `jobtrail mcp`, and the refusal is in the audit log."""

from __future__ import annotations

import json
from pathlib import Path

from test_mcp import agent, providers, submit

from jobtrail.store import open_store

__all__ = ["providers"]  # the module fixture, shared with test_mcp


async def test_an_agent_cannot_cancel_another_agents_operation(
    tmp_path: Path, providers: Path
) -> None:
    """One MCP client's operation cannot be cancelled by another; its own cancel works, and
    even a person's name given with --actor acts as an agent."""
    async with agent(tmp_path, providers, "--no-worker", "--actor", "alpha") as alpha:
        sent = await alpha.call("submit_job", submit({"account": "a1"}, "alpha-job"))
    async with agent(tmp_path, providers, "--no-worker", "--actor", "cli:root") as other:
        refused = await other.error(
            "cancel_job", {"operation_id": sent["operation_id"], "reason": "not mine"}
        )
    async with agent(tmp_path, providers, "--no-worker", "--actor", "alpha") as alpha:
        mine = await alpha.call(
            "cancel_job", {"operation_id": sent["operation_id"], "reason": "mine"}
        )
    assert "agent:cli:root may not cancel" in refused
    assert mine["cancel_requested_by"] == "agent:alpha"
    store = await open_store(str(tmp_path / "l.db"), create=False)
    try:
        entries = [json.loads(row.entry) for row in await store.audit_rows(sent["operation_id"])]
    finally:
        await store.close()
    refusals = [e for e in entries if e["kind"] == "policy.refused"]
    assert [(e["actor"], e["data"]["action"]) for e in refusals] == [("agent:cli:root", "cancel")]
