"""Adopting a remote job id for an operation that waits for a human decision.

A job id the provider tied to the operation (answered, listed, conflicting) is adopted on
the person's word. One the operation never saw (found by the provider's support, say) is
read first, through the operation's own provider: the read is the evidence, recorded with
the decision in one transaction. A job that cannot be read is refused and nothing changes
but the record of that read.
"""

from __future__ import annotations

from collections.abc import Callable

from jobtrail.core import outcomes as o
from jobtrail.core.local import seen_job_ids
from jobtrail.core.model import Attempt, AttemptKind, Operation, evolve
from jobtrail.core.states import State
from jobtrail.errors import ActionRefused
from jobtrail.ledger import Ledger, decision_action
from jobtrail.providers.guarded import guarded_call
from jobtrail.providers.registry import ProviderRegistry


async def adopt(
    ledger: Ledger, providers: ProviderRegistry, operation_id: str, decision: o.HumanDecision
) -> Operation:
    """Apply an adopt decision, reading the job's status first when the id is new to us."""
    op = await ledger.get(operation_id)
    await ledger.permit(decision_action(decision), decision.actor, op)  # before any call
    job_id = decision.job_id
    if not job_id or op.state is not State.NEEDS_HUMAN or job_id in seen_job_ids(op):
        return await ledger.decide(operation_id, decision)  # the core checks the rest
    attempt, outcome = await read_to_adopt(
        ledger,
        providers,
        op,
        job_id,
        decision.actor,
        refusal=lambda why: (
            f"{job_id!r} is not a job id this operation saw, and reading its status through "
            f"provider {op.provider!r} failed ({why}); nothing was changed. Check the id "
            "with the provider and decide again"
        ),
    )
    return await ledger.decide(operation_id, evolve(decision, read=outcome), read=attempt)


async def read_to_adopt(
    ledger: Ledger,
    providers: ProviderRegistry,
    op: Operation,
    job_id: str,
    actor: str,
    *,
    refusal: Callable[[str], str],
) -> tuple[Attempt, o.Observed]:
    """The status read that adopting `job_id` rests on (`read_job`). When it observes no
    job, the read is recorded all the same (it was sent: every request is an attempt in the
    ledger) and the adoption refused with the words `refusal` makes of the redacted reason."""
    attempt, outcome = await read_job(ledger, providers, op, job_id, actor)
    if not isinstance(outcome, o.Observed):
        await ledger.record_read(op.operation_id, attempt)
        why = ledger.redactor(op).text(getattr(outcome, "reason", type(outcome).__name__))
        raise ActionRefused(refusal(why))
    return attempt, outcome


async def read_job(
    ledger: Ledger, providers: ProviderRegistry, op: Operation, job_id: str, actor: str
) -> tuple[Attempt, o.CallOutcome]:
    """One status read of `job_id` through `op`'s provider, through the ledger's call verbs
    as every reader makes one: a finished attempt (not yet stored: it is recorded with the
    decision) and its outcome as the core judges it. A status read is safe: no intent is
    recorded before it."""
    probe = evolve(
        op, remote_job_id=job_id, status_url=None, status_via=None
    )  # never the old job's URL
    provider = providers.for_operation(op)
    request = provider.describe(AttemptKind.STATUS, probe)
    _, attempt = await ledger.begin_call(probe, AttemptKind.STATUS, request, actor)
    reply = await guarded_call(
        provider, ledger.redactor(op), AttemptKind.STATUS, probe, limit=providers.call_limit(op)
    )
    outcome: o.CallOutcome = (
        reply.outcome
        if reply.outcome is not None
        else o.Ambiguous(reason="the status read answered with no status")
    )
    return ledger.finished(probe, attempt, outcome, reply.detail)
