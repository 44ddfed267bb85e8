"""Pydantic AI (`pip install 'jobtrail[pydantic-ai]'`): the operation key of one tool call.

A durable agent resumes a run by replaying it: with Pydantic AI's DBOS integration
(`pydantic_ai.durable_exec.dbos.DBOSDurability`, or the older `DBOSAgent`), each model
request is a DBOS step whose recorded answer replays unchanged, tool call ids included, and
the run's id is derived from the workflow id and the step it starts at
(`<workflow id>:<step>`); a function tool is not a step, so a resumed workflow calls it
again. Keyed by (run id, tool call id), the tool's second call finds the operation its
first call recorded and follows it: the job is never sent twice. Outside a durable run both
ids are fresh for every run, so a key stays unique but nothing resumes.

OpenAI's Agents SDK has no such pair: its tool call ids come from the model's new answer on
every turn, so they cannot be the key there (docs/agents.md says what to use instead).
"""

from __future__ import annotations

import hashlib
from typing import Any

from pydantic_ai import RunContext

from jobtrail.errors import InvalidInput

PREFIX = "pydantic-ai"
_MAX_KEY = 200  # jobtrail's key limit


def tool_call_key(ctx: RunContext[Any], *, prefix: str = PREFIX) -> str:
    """`PREFIX:<run id>:<tool call id>`, the key for the job this one tool call starts
    (hashed when it would be longer than a key may be). Raises InvalidInput when the
    context names no tool call (the function was not called as a tool)."""
    run_id, call_id = ctx.run_id, ctx.tool_call_id
    if not run_id or not call_id:
        raise InvalidInput(
            "tool_call_key needs the RunContext of a tool call (its run_id and tool_call_id)"
        )
    key = f"{prefix}:{run_id}:{call_id}"
    if len(key) <= _MAX_KEY:
        return key
    return f"{prefix}:sha256:{hashlib.sha256(key.encode('utf-8')).hexdigest()}"
