"""Acting on what a census found: adopt a job into the ledger, or cancel it, each under the
action policy (adopt is a resolve: a person by default; cancel is a cancel), each audited.

Adopting reads the job's status first, through the provider file, as adopting an unseen job
id for a `needs_human` operation does (services/adoption.py): nothing is recorded when it
cannot be read. The read is then the first observation of a new operation recorded for the
job, adopted on the person's word (who and why), and observed, collected and validated like
any other. Cancelling a job an operation follows records that operation's cancel intent;
cancelling one no operation follows adopts it first, then records the intent: the worker
sends the cancel once, keeps observing, and the cancel deadline ends in
`cancellation_unconfirmed` if the provider never confirms it.
"""

from __future__ import annotations

from collections.abc import Mapping

from jobtrail.core import outcomes as o
from jobtrail.core.allows import cancellability
from jobtrail.core.ids import short_id
from jobtrail.core.model import Operation
from jobtrail.errors import ActionRefused, InvalidInput
from jobtrail.ledger import Ledger
from jobtrail.ledger.policy import Action
from jobtrail.providers.code.contract import CodeSpec
from jobtrail.providers.file.pathvalues import checked
from jobtrail.providers.file.spec import ProviderSpec
from jobtrail.providers.registry import ProviderRegistry
from jobtrail.services.adoption import read_to_adopt


def adoption_path(spec: ProviderSpec | CodeSpec, given: Mapping[str, str] | None) -> dict[str, str]:
    """The path values an adopted job's operation keeps: each one checked as at submit, and
    every one its status, cancel and result paths use given (InvalidInput names the first
    missing: the census lists those its `[census] path_values` reads)."""
    if isinstance(spec, CodeSpec) or not spec.create_placeholders:
        if given:
            raise InvalidInput(f"path: provider {spec.name!r} takes no path values")
        return {}
    values = checked(spec.create_placeholders, {**(given or {})}) if given else {}
    used = [spec.status_path or "", spec.cancel_path or "", spec.result.path or ""]
    needed = [n for n in spec.create_placeholders if any(f"{{{n}}}" in p for p in used)]
    missing = [n for n in needed if n not in values]
    if missing:
        listed = spec.census.path_values if spec.census else {}
        where = " (the census lists it: `path` in `census --json`)" if missing[0] in listed else ""
        raise InvalidInput(
            f"path: adopting a job of {spec.name!r} needs a value for {{{missing[0]}}}{where}: "
            f"give it as --path {missing[0]}=VALUE"
        )
    return values


async def adopt_job(
    ledger: Ledger,
    registry: ProviderRegistry,
    spec: ProviderSpec | CodeSpec,
    job_id: str,
    *,
    actor: str,
    reason: str,
    path: Mapping[str, str] | None = None,
) -> Operation:
    """A new operation following `job_id` at `spec`'s provider, adopted by `actor` for
    `reason`; refused when a live operation already follows it, or when its status cannot
    be read (nothing is then recorded). A job whose operation ended while it runs (ended
    here, running there) is adopted by a new operation; the ended one keeps its story.
    `path`: the values the provider's paths need for this job (Airflow's `dag_id` and
    `task_id`), as submit takes them; the census lists those it reads (`Listed.path`)."""
    values = adoption_path(spec, path)
    await ledger.permit(Action.RESOLVE, actor, None, subject=job_id)
    held = await ledger.find_by_remote_job(spec.name, job_id)
    if held is not None and not held.state.ends_automation:
        raise ActionRefused(
            f"{job_id!r} is already followed by {held.operation_id} ({held.state}); nothing "
            "was changed"
        )
    op = await ledger.record_adoption(spec, job_id, actor=actor, reason=reason, path=values)
    if op.remote_job_id == job_id:
        return op  # adopted before, under the same key: nothing is done twice
    attempt, outcome = await read_to_adopt(
        ledger,
        registry,
        op,
        job_id,
        actor,
        refusal=lambda why: (
            f"reading the status of {job_id!r} through provider {spec.name!r} failed ({why}); "
            f"it was not adopted ({op.operation_id} waits, never sent, for it to be adopted "
            "again). Check the id with the provider and adopt again"
        ),
    )
    decision = o.HumanDecision(
        decision=o.Decision.ADOPT,
        actor=actor,
        reason=reason,
        job_id=job_id,
        request_id=short_id("req_", ledger.rand),
        read=outcome,
    )
    return await ledger.decide(op.operation_id, decision, read=attempt)


async def cancel_job(
    ledger: Ledger,
    registry: ProviderRegistry,
    spec: ProviderSpec | CodeSpec,
    job_id: str,
    *,
    actor: str,
    reason: str,
    path: Mapping[str, str] | None = None,
) -> Operation:
    """The cancel intent for `job_id`, recorded on the operation that follows it when that
    one may be cancelled, else on a new operation adopting it (none follows it, or the one
    that did ended); the worker sends the cancel once and awaits its confirmation. The
    action policy is the cancel's (on the operation) and, to adopt, the resolve's."""
    held = await ledger.find_by_remote_job(spec.name, job_id)
    if held is not None:
        verdict = cancellability(held)
        if verdict.asked:
            return held
        if verdict.allowed:
            return await ledger.cancel(held.operation_id, actor=actor, reason=reason)
        if not held.state.ends_automation:
            raise ActionRefused(f"{job_id!r} is followed by {held.operation_id}: {verdict.why}")
    adopted = await adopt_job(
        ledger, registry, spec, job_id, actor=actor, reason=f"to cancel it: {reason}", path=path
    )
    if adopted.cancel_intent is not None:
        return adopted  # asked before
    return await ledger.cancel(adopted.operation_id, actor=actor, reason=reason)
