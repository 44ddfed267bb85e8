"""Reads under the action policy, as two agents meet it over MCP (issue 36): an agent reads
the operations it submitted, and no other unless the policy says so. `get_job`, `wait_job`,
`get_result` and `explain_job` on another agent's operation are refused with one clear
sentence, each refusal audited like a refused action; `list_jobs` lists only what the agent
may read; a `wait_job` task is not opened on another agent's operation, nor a key another
agent used handed over. Over stdio (two `jobtrail mcp` processes with their own `--actor`)
and over authenticated Streamable HTTP (`jobtrail serve`, two agent tokens)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from test_mcp import agent, providers, submit
from test_mcp_http import ALPHA, API, BETA, serving
from test_mcp_http import agent as http_agent
from test_mcp_http import sim as http_sim

from jobtrail.store import open_store

__all__ = ["http_sim", "providers"]  # the fixtures, shared with test_mcp and test_mcp_http

READS = ["get_job", "get_result", "explain_job", "wait_job"]


def _arguments(tool: str, operation_id: str) -> dict[str, Any]:
    if tool == "wait_job":
        return {"operation_id": operation_id, "timeout_seconds": 0}
    return {"operation_id": operation_id}


async def _refusals(db: Path) -> list[tuple[str, str, str]]:
    store = await open_store(str(db), create=False)
    try:
        rows = await store.audit_rows()
    finally:
        await store.close()
    entries = [json.loads(row.entry) for row in rows]
    return [
        (e["actor"], e["data"]["action"], e["data"]["owner"])
        for e in entries
        if e["kind"] == "policy.refused"
    ]


async def test_an_agent_reads_only_what_it_submitted_over_stdio(
    tmp_path: Path, providers: Path
) -> None:
    """beta cannot read alpha's operation by any read tool, nor see it listed; alpha reads
    it; each of beta's refused reads is in the audit log."""
    async with agent(tmp_path, providers, "--no-worker", "--actor", "alpha") as alpha:
        mine = await alpha.call("submit_job", submit({"account": "r1"}, "alpha-r1"))
        op_id = mine["operation_id"]
    async with agent(tmp_path, providers, "--no-worker", "--actor", "beta") as beta:
        own = await beta.call("submit_job", submit({"account": "r2"}, "beta-r2"))
        refused = {tool: await beta.error(tool, _arguments(tool, op_id)) for tool in READS}
        listed = await beta.call("list_jobs", {})
        # the same key and request: the operation is alpha's, and is not handed to beta
        reused = await beta.error("submit_job", submit({"account": "r1"}, "alpha-r1"))
    async with agent(tmp_path, providers, "--no-worker", "--actor", "alpha") as alpha:
        read = {tool: await alpha.call(tool, _arguments(tool, op_id)) for tool in READS}
        alpha_listed = await alpha.call("list_jobs", {})
    expected = (
        f"agent:beta may not read operation {op_id}: it may read only operations it "
        "submitted (agent:alpha submitted this one)"
    )
    assert {tool: expected in text for tool, text in refused.items()} == dict.fromkeys(
        READS, True
    ), refused
    assert expected in reused
    assert [job["operation_id"] for job in listed["jobs"]] == [own["operation_id"]]
    assert [job["operation_id"] for job in alpha_listed["jobs"]] == [op_id]
    assert read["get_job"]["operation_id"] == op_id and read["get_result"]["available"] is False
    assert await _refusals(tmp_path / "l.db") == [("agent:beta", "read", "agent:alpha")] * 5


async def test_the_policy_lets_one_agent_read_every_operation(
    tmp_path: Path, providers: Path
) -> None:
    """`[actors."agent:auditor"] read = "any"` lets that agent read and list every
    operation; a policy file that does not name `read` keeps agents to their own."""
    policy = tmp_path / "policy.toml"
    policy.write_text(
        '[kinds.agent]\nsubmit = "any"\ncancel = "own"\n\n[actors."agent:auditor"]\nread = "any"\n',
        encoding="utf-8",
    )
    env = {"JOBTRAIL_POLICY": str(policy)}
    async with agent(tmp_path, providers, "--no-worker", "--actor", "alpha", env=env) as alpha:
        op_id = (await alpha.call("submit_job", submit({"account": "p1"}, "p1")))["operation_id"]
    async with agent(tmp_path, providers, "--no-worker", "--actor", "auditor", env=env) as aud:
        seen = await aud.call("get_job", {"operation_id": op_id})
        listed = await aud.call("list_jobs", {})
    async with agent(tmp_path, providers, "--no-worker", "--actor", "beta", env=env) as beta:
        refused = await beta.error("explain_job", {"operation_id": op_id})
        beta_listed = await beta.call("list_jobs", {})
    assert seen["actor"] == "agent:alpha"
    assert [job["operation_id"] for job in listed["jobs"]] == [op_id]
    assert f"under {policy}" in refused and beta_listed["count"] == 0


async def test_no_wait_task_on_another_agents_operation_over_http(
    tmp_path: Path, http_sim: Any
) -> None:
    """Over HTTP, beta's wait_job on alpha's running operation opens no task: the plain
    tool's refusal answers, audited; alpha's own wait_job does open one."""
    with serving(tmp_path, str(tmp_path / "l.db"), "serve-r") as (url, _):
        async with http_agent(url, ALPHA, tasks=False) as plain:  # a plain answer, at once
            endless = submit({"a": 1, "_sim": {"never_finish": True}}, "alpha-endless")
            sent = await plain.call_tool("submit_job", endless)
            op_id = (sent.structured_content or {})["operation_id"]
            waited = {"operation_id": op_id, "timeout_seconds": 1}
        async with http_agent(url, ALPHA) as alpha:
            own = await alpha.session.call_tool("wait_job", waited, allow_claimed=True)
        async with http_agent(url, BETA) as beta:
            foreign = await beta.session.call_tool("wait_job", waited, allow_claimed=True)
            listed = await beta.call_tool("list_jobs", {})
    assert isinstance(own, API.CreatedTask)
    assert not isinstance(foreign, API.CreatedTask) and foreign.is_error
    text = getattr(foreign.content[0], "text", "")
    assert f"agent:beta may not read operation {op_id}: it may read only" in text, text
    assert (listed.structured_content or {})["count"] == 0
    assert await _refusals(tmp_path / "l.db") == [("agent:beta", "read", "agent:alpha")]
