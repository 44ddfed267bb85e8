"""The human decisions as every surface records them: resolving an operation that waits for
a person (adopt a job id, mark it failed, retry it as new) and extending a deadline.

The Client, the CLI and the dashboard parse their own input and call these two verbs, so a
decision means the same, and is recorded the same, whichever way a person gives it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from jobtrail.adoption import adopt
from jobtrail.core import outcomes as o
from jobtrail.core.ids import short_id
from jobtrail.core.model import Operation
from jobtrail.errors import InvalidInput
from jobtrail.ledger import Ledger
from jobtrail.providers.registry import ProviderRegistry

RESOLUTIONS = ("adopt", "mark-failed", "retry-as-new")
Deadline = Literal["result", "cancel"]


@dataclass(frozen=True, kw_only=True)
class Resolved:
    """The operation decided on, and for retry-as-new the new operation to follow."""

    op: Operation
    replaced_by: Operation | None = None


def resolution(name: str) -> o.Decision:
    """`adopt`, `mark-failed` or `retry-as-new` (`_` for `-` too) as a Decision."""
    wanted = name.strip().replace("_", "-")
    if wanted not in RESOLUTIONS:
        raise InvalidInput(f"unknown decision {name!r}; use {', '.join(RESOLUTIONS)}")
    return o.Decision(wanted.replace("-", "_"))


async def resolve(
    ledger: Ledger,
    providers: ProviderRegistry,
    operation_id: str,
    decision: str,
    *,
    actor: str,
    reason: str,
    job_id: str | None = None,
) -> Resolved:
    """Record `actor`'s decision for an operation in needs_human. Adopting a job id the
    operation never saw reads it through `providers` first (jobtrail.adoption)."""
    choice = resolution(decision)
    human = o.HumanDecision(
        decision=choice,
        actor=actor,
        reason=reason,
        job_id=job_id,
        request_id=short_id("req_", ledger.rand),
    )
    if choice is o.Decision.ADOPT:
        return Resolved(op=await adopt(ledger, providers, operation_id, human))
    op = await ledger.decide(operation_id, human)
    if choice is not o.Decision.RETRY_AS_NEW:
        return Resolved(op=op)
    return Resolved(op=op, replaced_by=await ledger.resubmit(op, actor=actor, reason=reason))


async def extend(
    ledger: Ledger,
    operation_id: str,
    *,
    deadline: Deadline,
    by: timedelta,
    actor: str,
    reason: str,
) -> Operation:
    """Resume automation until now + `by`: the result deadline of a result_timed_out
    operation, or the cancel deadline of a cancellation_unconfirmed one (the ledger refuses
    the other pairings)."""
    human = o.HumanDecision(
        decision=o.Decision.EXTEND_CANCEL if deadline == "cancel" else o.Decision.EXTEND,
        actor=actor,
        reason=reason,
        new_deadline=ledger.clock() + by,
        request_id=short_id("req_", ledger.rand),
    )
    return await ledger.decide(operation_id, human)
