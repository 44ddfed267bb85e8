"""Task handles: durable, unguessable handles on operations, as the MCP Tasks extension
(SEP-2663) asks for, and the rules that say what a handle shows.

A task id is a bearer secret: whoever holds it may read (and cancel) the task. The ledger
stores only its SHA-256 (`task_hash`), the operation it follows, the identity it is bound
to, which tool opened it and when it expires; never the id itself, so a database reader
cannot use a handle. An operation's state maps onto the extension's five task words here,
once, for every surface that serves tasks.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from jobtrail.core.canonical import sha256_text
from jobtrail.core.model import Operation
from jobtrail.core.nextstep import PERSON_STATES
from jobtrail.core.states import State

TASK_PREFIX = "task_"
POLL_FLOOR = timedelta(milliseconds=500)  # never ask a client to poll faster than this
POLL_CAP = timedelta(hours=1)  # nor to sleep longer: a cancel or a webhook may come first
POLL_LEASED = timedelta(seconds=1)  # a worker is on it now: its step ends within seconds


class TaskStatus(StrEnum):
    WORKING = "working"
    INPUT_REQUIRED = "input_required"
    COMPLETED = "completed"
    FAILED = "failed"  # the extension keeps it for JSON-RPC errors, never a job's failure
    CANCELLED = "cancelled"


# Ended with a tool-level error: the job failed, or its result could not be had or trusted.
_ENDED_IN_ERROR = frozenset(
    {State.FAILED, State.RESULT_UNAVAILABLE, State.RESULT_VALIDATION_FAILED}
)


@dataclass(frozen=True, kw_only=True)
class TaskHandle:
    """One task, as the ledger keeps it (never with its id)."""

    task_hash: str
    operation_id: str
    owner: str  # the identity the task is bound to (an agent's actor name)
    tool: str  # the tool whose call the task stands for
    existing: bool  # the call found its operation already recorded under its key
    created_at: datetime
    expires_at: datetime | None  # None: no time to live

    @property
    def ttl(self) -> timedelta | None:
        return None if self.expires_at is None else self.expires_at - self.created_at

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and now >= self.expires_at


def new_task_id(rand: random.Random) -> str:
    """`task_` and 256 random bits (hex): a bearer handle nobody can guess or enumerate."""
    return f"{TASK_PREFIX}{rand.getrandbits(256):064x}"


task_hash = sha256_text  # what the ledger keeps of a task id: its SHA-256, in hex


def task_status(state: State) -> TaskStatus:
    """The task word for an operation's state. A job that failed at the provider (or whose
    result failed) completed as a tool call: its result says so with `isError`; `cancelled`
    only once the provider confirmed the cancel."""
    if state is State.CANCELLED:
        return TaskStatus.CANCELLED
    if state in PERSON_STATES:  # a person must decide before the operation goes on
        return TaskStatus.INPUT_REQUIRED
    if state.ends_automation:
        return TaskStatus.COMPLETED
    return TaskStatus.WORKING


def ended_in_error(state: State) -> bool:
    """Whether a completed task's tool result is an error (`isError: true`)."""
    return state in _ENDED_IN_ERROR


def poll_interval(op: Operation, now: datetime) -> timedelta | None:
    """How long a client should wait before asking again: until the operation's stored next
    poll time (a second while a worker holds it), within [POLL_FLOOR, POLL_CAP]; None once
    automation ended (nothing will change by itself)."""
    if op.state.ends_automation:
        return None
    if op.lease_owner is not None or op.next_poll_at is None:
        wait = POLL_LEASED
    else:
        wait = op.next_poll_at - now
    return min(max(wait, POLL_FLOOR), POLL_CAP)
