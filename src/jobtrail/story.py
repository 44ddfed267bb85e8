"""An operation's story as `explain` tells it, read from the ledger in one place: the CLI's
`explain`, the Client's `explain` and the agents' `explain_job` tell the same one."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from jobtrail.core.model import Attempt, Observation, Operation, Transition
from jobtrail.ledger import Ledger
from jobtrail.views import explain_text


@dataclass(frozen=True, kw_only=True)
class Story:
    """What `explain` needs of one operation, read at `now`."""

    op: Operation
    history: list[Transition]
    attempts: list[Attempt]
    observations: list[Observation]
    body: Any  # the request body, redacted as it may be shown
    now: datetime

    def text(self, *, missing: str | None = None) -> str:
        """The story in words; `missing` says why its code provider is not available here."""
        return explain_text(
            self.op,
            self.history,
            self.attempts,
            self.observations,
            self.now,
            body=self.body,
            missing=missing,
        )


async def read_story(ledger: Ledger, op: Operation) -> Story:
    """`op`'s story as the ledger holds it now."""
    store = ledger.store
    return Story(
        op=op,
        history=await store.history(op.operation_id),
        attempts=await store.attempts(op.operation_id),
        observations=await store.observations(op.operation_id),
        body=ledger.redactor(op).json(op.request.body),
        now=ledger.clock(),
    )
