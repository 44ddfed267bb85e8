"""An operation's story, read from the ledger in one place: the CLI's `explain` and
`escalation`, the Client's `explain`, the agents' `explain_job` and the dashboard's
operation page tell the same one."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from jobtrail.core.model import Attempt, Observation, Operation, Transition
from jobtrail.ledger import Ledger
from jobtrail.presentation.explain import escalation_bundle, explain_text


@dataclass(frozen=True, kw_only=True)
class Story:
    """What `explain` needs of one operation, read at `now`."""

    op: Operation
    history: list[Transition]
    attempts: list[Attempt]
    observations: list[Observation]
    body: Any  # the request body, redacted as it may be shown
    now: datetime
    audit: list[dict[str, Any]] = field(default_factory=list)  # read only when asked for

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

    def escalation(self) -> dict[str, Any]:
        """The escalation bundle, for a person or the provider's support."""
        return escalation_bundle(self.op, self.history, self.attempts, self.now)


async def read_story(ledger: Ledger, op: Operation, *, audit: bool = False) -> Story:
    """`op`'s story as the ledger holds it now; with `audit`, its audit log entries too."""
    rows = await ledger.audit_rows(op.operation_id) if audit else []
    return Story(
        op=op,
        history=await ledger.history(op.operation_id),
        attempts=await ledger.attempts(op.operation_id),
        observations=await ledger.observations(op.operation_id),
        body=ledger.redactor(op).json(op.request.body),
        now=ledger.now(),
        audit=[json.loads(row.entry) for row in rows],
    )
