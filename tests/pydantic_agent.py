"""A durable Pydantic AI agent (DBOS on SQLite) whose one tool starts a report through
jobtrail: the block of docs/agents.md that defines it, run as written, with a FunctionModel
(no network) that calls `build_report` once, then answers with what the tool returned. Run
as a script by tests/integration/test_pydantic_ai_crash.py:

    python tests/pydantic_agent.py LEDGER DBOS_DB WORKFLOW_ID

It starts the workflow WORKFLOW_ID, or, when DBOS knows it already (a crash left it
pending: `DBOS.launch()` recovers it), waits for it; then prints {"answer": ...}."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path

from dbos import DBOS, SetWorkflowID
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

DOCS = Path(__file__).resolve().parents[1] / "docs" / "agents.md"
LEDGER, DBOS_DB, WORKFLOW_ID = sys.argv[1:4]


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


MODEL = FunctionModel(model)
(_BLOCK,) = [
    block
    for block in re.findall(r"^```python\n(.*?)^```", DOCS.read_text(encoding="utf-8"), re.M | re.S)
    if "DBOSDurability()" in block
]
exec(compile(_BLOCK, str(DOCS), "exec"))  # defines agent, build_report, report_workflow


async def main() -> None:
    DBOS(config={"name": "jobtrail-agent", "system_database_url": f"sqlite:///{DBOS_DB}"})
    DBOS.launch()  # recovers a workflow a crash left pending, on its own event loop
    try:
        if await DBOS.get_workflow_status_async(WORKFLOW_ID) is None:
            with SetWorkflowID(WORKFLOW_ID):
                start = DBOS.start_workflow_async(report_workflow, "February report")  # noqa: F821
                handle = await start
        else:
            handle = await DBOS.retrieve_workflow_async(WORKFLOW_ID)
        print(json.dumps({"answer": await handle.get_result()}), flush=True)
    finally:
        DBOS.destroy()


if __name__ == "__main__":
    asyncio.run(main())
