"""The human decisions as every surface records them: resolving an operation that waits for
a person (adopt a job id, mark it failed, retry it as new; for a result that failed
validation: mark it failed, accept it as it is, collect it again) and extending a deadline.

The Client, the CLI and the dashboard parse their own input and call these two verbs, so a
decision means the same, and is recorded the same, whichever way a person gives it. An
operation is named by its id or its key."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from jobtrail.core import outcomes as o
from jobtrail.core.allows import Deadline
from jobtrail.core.ids import short_id
from jobtrail.core.model import Operation
from jobtrail.errors import InvalidInput
from jobtrail.ledger import Ledger
from jobtrail.providers.registry import ProviderRegistry
from jobtrail.services.adoption import adopt

_RESOLVING = (
    o.Decision.ADOPT,
    o.Decision.MARK_FAILED,
    o.Decision.RETRY_AS_NEW,
    o.Decision.ACCEPT_AS_IS,
    o.Decision.COLLECT_AGAIN,
)
RESOLUTIONS = tuple(d.spoken for d in _RESOLVING)
COLLECT_FOR = timedelta(hours=1)  # collect-again: the result deadline is at least now + this

__all__ = ["RESOLUTIONS", "Deadline", "Resolved", "extend", "resolution", "resolve"]


@dataclass(frozen=True, kw_only=True)
class Resolved:
    """The operation decided on, and for retry-as-new the new operation to follow."""

    op: Operation
    replaced_by: Operation | None = None


def resolution(name: str) -> o.Decision:
    """A decision's word (`adopt`, `mark-failed`, ...; `_` for `-` too) as a Decision."""
    wanted = name.strip().replace("_", "-")
    if wanted not in RESOLUTIONS:
        raise InvalidInput(f"unknown decision {name!r}; use {', '.join(RESOLUTIONS)}")
    return o.Decision(wanted.replace("-", "_"))


async def resolve(
    ledger: Ledger,
    providers: ProviderRegistry,
    ref: str,
    decision: str,
    *,
    actor: str,
    reason: str,
    job_id: str | None = None,
    request_id: str | None = None,
) -> Resolved:
    """Record `actor`'s decision for the operation `ref` (its id or key) that waits for a
    person. Adopting a job id the operation never saw reads it through `providers` first
    (jobtrail.services.adoption). `request_id` names the request: given again, nothing is done
    twice."""
    choice = resolution(decision)
    op = await ledger.get(ref)
    human = o.HumanDecision(
        decision=choice,
        actor=actor,
        reason=reason,
        job_id=job_id,
        new_deadline=ledger.now() + COLLECT_FOR if choice is o.Decision.COLLECT_AGAIN else None,
        request_id=request_id or short_id("req_", ledger.rand),
    )
    if choice is o.Decision.ADOPT:
        return Resolved(op=await adopt(ledger, providers, op.operation_id, human))
    decided = await ledger.decide(op.operation_id, human)
    if choice is not o.Decision.RETRY_AS_NEW:
        return Resolved(op=decided)
    again = await ledger.resubmit(decided, actor=actor, reason=reason)
    return Resolved(op=decided, replaced_by=again)


async def extend(
    ledger: Ledger,
    ref: str,
    *,
    deadline: Deadline,
    by: timedelta,
    actor: str,
    reason: str,
    request_id: str | None = None,
) -> Operation:
    """Resume automation until now + `by`: the result deadline of a result_timed_out
    operation, or the cancel deadline of a cancellation_unconfirmed one (the core refuses
    the other pairings). `ref` is the operation's id or key."""
    op = await ledger.get(ref)
    human = o.HumanDecision(
        decision=o.Decision.EXTEND_CANCEL if deadline == "cancel" else o.Decision.EXTEND,
        actor=actor,
        reason=reason,
        new_deadline=ledger.now() + by,
        request_id=request_id or short_id("req_", ledger.rand),
    )
    return await ledger.decide(op.operation_id, human)
