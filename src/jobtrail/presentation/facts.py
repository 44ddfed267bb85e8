"""What `explain` says of an operation beyond its timeline, from its record and history: how
a lost create answer was resolved (which reconciliation tier), whether the remote work stops
by itself at the deadline, and what the provider reported of work done and billed.

The words for tiers and deadlines are core/proof.py's, so `provider check` and `explain` say
the same thing; these functions only pick which applies to one operation.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

from jobtrail.core.durations import format_duration
from jobtrail.core.model import AttemptKind, Operation, Tier, Transition
from jobtrail.core.plan import Call, call_for, watched_until
from jobtrail.core.proof import TIER_NAMES
from jobtrail.core.states import Evidence, State
from jobtrail.core.words import iso

_LOOKING = frozenset({State.CREATE_UNKNOWN, State.RECONCILIATION})
_ANSWERED = frozenset({Evidence.CREATE_ACCEPTED, Evidence.SYNC_RESULT})
_STOPPED = {
    Evidence.NO_RECONCILIATION: "the provider offers no way to find the job (in doubt)",
    Evidence.CREATE_DEADLINE_PASSED: "nothing settled it before the create deadline",
    Evidence.LOOKUP_CAPPED: "the scan of the listing stopped at its cap before it reached "
    "back to the create",
    Evidence.CREATE_UNPROVEN: "the retry was refused, which proves neither a job nor its absence",
    Evidence.CONTRACT_VIOLATION: "the provider tied our token or reference to another job",
}


def fact_rows(op: Operation, history: list[Transition]) -> list[tuple[str, str]]:
    """(label, text) for what `explain` and the dashboard add."""
    rows = []
    reconciled = reconciled_text(op, history)
    if reconciled is not None:
        rows.append(("reconciled", reconciled))
    rows.append(("stops", deadline_text(op)))
    if op.usage:
        rows.append(("usage", usage_text(op.usage)))
    return rows


def fact_lines(op: Operation, history: list[Transition]) -> list[str]:
    """The lines `explain` adds, each `label: text` padded as the others are."""
    return [f"  {(label + ':').ljust(11)} {text}" for label, text in fact_rows(op, history)]


def reconciled_text(op: Operation, history: list[Transition]) -> str | None:
    """How a lost create answer was resolved, naming the tier; None if none was lost."""
    looked = [t for t in history if t.from_state in _LOOKING]
    if not looked and op.state not in _LOOKING:
        return None
    looked_up = op.capabilities.lookup_tier
    end = next((t for t in looked if t.to_state is not State.RECONCILIATION), None)
    if end is None:
        return f"a create answer was lost; {_looking(op)}"
    retried = any(t.evidence in _ANSWERED for t in looked)
    match end.to_state, end.evidence:
        case (
            State.ACCEPTED | State.RESULT_COLLECTING,
            Evidence.CREATE_ACCEPTED | Evidence.SYNC_RESULT,
        ):
            how = f"{TIER_NAMES[Tier.TOKEN]}: a retry under the same token returned job {_job(end)}"
        case State.ACCEPTED, Evidence.RECONCILED_FOUND if retried:
            how = (
                f"{TIER_NAMES[Tier.TOKEN]}: a retry under the same token returned job "
                f"{_job(end)}, and the lookup confirmed it"
            )
        case State.ACCEPTED, Evidence.RECONCILED_FOUND:
            how = f"{_by(looked_up)}: the lookup found job {_job(end)}"
        case State.CREATE_PENDING, Evidence.ABSENCE_PROVEN:
            how = (
                f"{_by(looked_up)}: the lookup proved that no job existed, so the operation "
                "went back to create_pending to send the create again"
            )
        case State.NEEDS_HUMAN, evidence:
            why = _STOPPED.get(evidence, "it could not be settled")
            return _decided(history[history.index(end) + 1 :], why)
        case _:
            return f"a create answer was lost; it ended {end.to_state}"
    return f"a create answer was lost; resolved by {how}"


def _decided(after: list[Transition], why: str) -> str:
    """A lost create answer that stopped for a person: not resolved until a person decided,
    then resolved by that decision (who, when, what), as the history records it."""
    decision = next(
        (
            t
            for t in after
            if t.from_state is State.NEEDS_HUMAN and t.evidence is Evidence.HUMAN_DECISION
        ),
        None,
    )
    if decision is None:
        return f"a create answer was lost and not resolved: {why}; a person decides"
    if decision.to_state is State.ACCEPTED:
        what = f"adopted job {_job(decision)}"
    else:
        what = f"ended it {decision.to_state}"
    return (
        f"a create answer was lost and could not be settled automatically ({why}); resolved "
        f"by a person: {decision.actor} {what} at {iso(decision.at)}"
    )


def _looking(op: Operation) -> str:
    """The means the next call looking for a lost create's job uses: a retry under the
    same token, or the lookup (by the tier it uses)."""
    call = call_for(op)
    if isinstance(call, Call) and call.kind is AttemptKind.CREATE:
        return (
            f"jobtrail is looking for the job by a retry under the same token ({_by(Tier.TOKEN)})"
        )
    if isinstance(call, Call) and call.kind is AttemptKind.RECONCILE:
        return f"jobtrail is looking for the job by a lookup ({_by(op.capabilities.lookup_tier)})"
    return "the provider declares no way to find the job: a person decides"


def _by(tier: Tier) -> str:
    return TIER_NAMES[tier] if tier is not Tier.NONE else "no declared means"


def _job(step: Transition) -> str:
    return step.remote_job_id or "(its id is in the next step)"


def deadline_text(op: Operation) -> str:
    """Whether the remote work stops by itself at the deadline, or only when cancelled."""
    sent = op.request.remote_deadline
    if sent is not None:
        result = op.result_deadline - op.created_at
        text = (
            f"the remote job stops by itself {format_duration(timedelta(seconds=sent))} "
            f"after it starts (written in the create; the result deadline is "
            f"{format_duration(result)})"
        )
        watched = watched_until(op)
        if watched > op.result_deadline and not op.state.ends_automation:
            text += f"; its end is read until {iso(watched)}, to keep what it finished"
        return text
    if op.capabilities.remote_deadline:
        return (
            "only when cancelled: the provider takes a deadline, but none it accepts is as "
            "short as the result deadline"
        )
    return "only when cancelled: the provider takes no deadline of its own"


def usage_text(usage: dict[str, float]) -> str:
    """`input_tokens 1200, output_tokens 345`: the provider's numbers as it reported them."""
    return ", ".join(f"{name} {_number(value)}" for name, value in sorted(usage.items()))


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def usage_totals(ops: Iterable[Operation]) -> dict[str, float]:
    """The providers' usage summed by name over `ops` (`list --json`'s totals)."""
    totals: dict[str, float] = {}
    for op in ops:
        for name, value in (op.usage or {}).items():
            totals[name] = totals.get(name, 0) + value
    return dict(sorted(totals.items()))
