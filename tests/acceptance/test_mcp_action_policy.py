"""The action policy as an MCP client meets it: an agent cannot cancel another agent's
operation through `jobtrail mcp`, and the refusal is in the audit log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_mcp import agent, providers, submit

from jobtrail.store import open_store

# `make slow` (its own CI step): MCP server processes per agent.
pytestmark = pytest.mark.slow

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


async def test_a_client_cannot_take_a_named_agents_grant_by_its_name(
    tmp_path: Path, providers: Path
) -> None:
    """Issue 19: the policy grants agent:ops any cancel; a client calling itself "ops" is
    still the server's configured identity (JOBTRAIL_ACTOR here), so it gets no grant, and
    the name it gave appears nowhere; the server configured as ops does get it."""
    policy = tmp_path / "policy.toml"
    policy.write_text('[actors."agent:ops"]\ncancel = "any"\n', encoding="utf-8")
    env = {"JOBTRAIL_POLICY": str(policy)}
    async with agent(tmp_path, providers, "--no-worker", "--actor", "alpha", env=env) as alpha:
        sent = await alpha.call("submit_job", submit({"account": "a9"}, "alpha-2"))
    poser_env = env | {"JOBTRAIL_ACTOR": "agent:intern"}
    async with agent(tmp_path, providers, "--no-worker", env=poser_env, name="ops") as poser:
        refused = await poser.error(
            "cancel_job", {"operation_id": sent["operation_id"], "reason": "posing as ops"}
        )
        own = await poser.call("submit_job", submit({"account": "a10"}, "intern-1"))
    async with agent(tmp_path, providers, "--no-worker", "--actor", "ops", env=env) as ops:
        granted = await ops.call(
            "cancel_job", {"operation_id": sent["operation_id"], "reason": "ops may"}
        )
    assert "agent:intern may not cancel" in refused
    assert own["operation_id"] and granted["cancel_requested_by"] == "agent:ops"
    store = await open_store(str(tmp_path / "l.db"), create=False)
    try:
        mine = await store.get(own["operation_id"])
        rows = await store.audit_rows()
    finally:
        await store.close()
    entries = [json.loads(row.entry) for row in rows]
    assert mine is not None and mine.actor == "agent:intern"
    submitters = {e["actor"] for e in entries if e["kind"] == "operation.submitted"}
    refusals = [e["actor"] for e in entries if e["kind"] == "policy.refused"]
    assert submitters == {"agent:alpha", "agent:intern"} and refusals == ["agent:intern"]
