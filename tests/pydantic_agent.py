"""A durable Pydantic AI agent (DBOS on SQLite) whose one tool starts a report through
jobtrail, run as a script by tests/integration/test_pydantic_ai_crash.py:

    python tests/pydantic_agent.py LEDGER DBOS_DB WORKFLOW_ID

The model is a FunctionModel (no network): it calls `build_report` once, then answers with
what the tool returned. The tool takes its operation key from the framework's stable
identity for that one call (`tool_call_key`), so a workflow that DBOS recovers after a crash
calls the tool again and follows the operation its first run recorded. A separate
`jobtrail worker` drives the operation; this process only records and waits. It prints one
JSON line per event: {"submitted": ...} from the tool, {"answer": ...} at the end."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from dbos import DBOS, SetWorkflowID
from pydantic_ai import Agent, RunContext
from pydantic_ai.durable_exec.dbos import DBOSDurability
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import jobtrail
from jobtrail.integrations.pydantic_ai import tool_call_key

LEDGER, DBOS_DB, WORKFLOW_ID = sys.argv[1:4]


def say(**event: Any) -> None:
    print(json.dumps(event), flush=True)


def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    returned = [
        part.content
        for message in messages
        for part in getattr(message, "parts", [])
        if isinstance(part, ToolReturnPart)
    ]
    if returned:
        return ModelResponse(parts=[TextPart(f"Here is the report:\n{returned[-1]}")])
    return ModelResponse(
        parts=[ToolCallPart("build_report", {"account": "acct_7", "month": "2026-02"})]
    )


agent = Agent(FunctionModel(model), name="reports", capabilities=[DBOSDurability()])


@agent.tool
async def build_report(ctx: RunContext[None], account: str, month: str) -> str:
    """Build the monthly report (long-running; safe to call again)."""
    # Opened per call: DBOS runs a recovered workflow on an event loop of its own.
    async with jobtrail.Client(LEDGER, worker=False, actor="agent:reports") as jt:
        op = await jt.submit(
            "reports",
            {"account": account, "month": month, "_sim": {"duration_seconds": 3}},
            key=tool_call_key(ctx),
            reason=f"build_report({account}, {month})",
        )
        say(submitted=op.operation_id, key=op.key)
        op = await jt.wait(op.operation_id, timeout=120)
        if op.state is not jobtrail.State.SUCCEEDED:
            return f"no report ({op.state})"
        result = await jt.result(op.operation_id)
        return result.text()


@DBOS.workflow()
async def report_workflow(prompt: str) -> str:
    result = await agent.run(prompt)
    return result.output


async def main() -> None:
    DBOS(config={"name": "jobtrail-agent", "system_database_url": f"sqlite:///{DBOS_DB}"})
    DBOS.launch()  # recovers a workflow a crash left pending, on its own event loop
    try:
        if await DBOS.get_workflow_status_async(WORKFLOW_ID) is None:
            with SetWorkflowID(WORKFLOW_ID):
                handle = await DBOS.start_workflow_async(report_workflow, "February report")
        else:
            handle = await DBOS.retrieve_workflow_async(WORKFLOW_ID)
        say(answer=await handle.get_result())
    finally:
        DBOS.destroy()


if __name__ == "__main__":
    asyncio.run(main())
