"""What a waiting `wait_job` says: its default bound, its progress notifications' words and
the instruction to call again (docs/agents.md, "Clients that do not poll tasks")."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

from jobtrail.core.model import Operation
from jobtrail.core.nextstep import next_step

# Below the 60 s after which common MCP clients abandon a call (docs/agents.md): a wait
# answers before the client gives up, and says to call again.
WAIT_DEFAULT_SECONDS = 45.0
PROGRESS_EVERY_SECONDS = 2.0  # a waiting call's progress notifications, at most this often
Progress = Callable[[float, float, str], Awaitable[None]]  # (waited, bound, message)


def progress_words(op: Operation, now: datetime) -> str:
    seen = f" (provider: {op.remote_state})" if op.remote_state else ""
    return f"{op.state}{seen}; next: {next_step(op, now)}"


def instruction(op: Operation) -> str:
    """What the agent does after a wait: call again while automation goes on."""
    if op.state.ends_automation:
        return f"automation has ended ({op.state}): no need to wait again"
    return (
        f"still {op.state}: call wait_job again with operation_id {op.operation_id!r} to keep "
        "waiting (the operation goes on whether or not anyone waits)"
    )
