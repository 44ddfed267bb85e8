"""What the at-most-once promise rests on, in one sentence each, from a provider's declared
capabilities: the words `provider check` says and `explain` repeats (one home, DESIGN): when
a lookup miss proves absence, the reconciliation tier and its limits, and whether remote
work stops by itself at the deadline."""

from __future__ import annotations

import json
from datetime import timedelta

from jobtrail.core.durations import format_duration
from jobtrail.core.leases import effect_lease
from jobtrail.core.model import Capabilities, Idempotency, Json, Operation, Tier
from jobtrail.core.remote_deadline import RemoteDeadline


def at_most_once_rule(caps: Capabilities, means: list[str]) -> str:
    """Whether at most one job per operation can be proven, and what the proof rests on:
    the words `provider check` says beside "at-most-once create", for provider files and
    code providers alike."""
    if not caps.at_most_once_provable:
        return (
            "cannot be proven: this provider offers no reconciliation (no idempotency token "
            "it honours, no lookup by a reference it keeps). A create whose answer is lost "
            "stops for a human (needs_human) instead of being retried: jobtrail never "
            "resubmits it on its own, whatever its method (its HTTP client re-sends nothing)"
        )
    how = " and ".join(means) or "the provider's own token"
    only_token = caps.same_token_retry and not caps.lookup
    if only_token and caps.idempotency is not Idempotency.NATURAL:
        kept = (
            "how long it does is undocumented"
            if caps.token_kept_for is None
            else f"it does for {format_duration(_seconds(caps.token_kept_for))}"
        )
        return (
            f"provable while the provider remembers the token ({kept}): a lost create "
            f"answer is resolved by {how}, never by sending a new token"
        )
    return f"provable: a lost create answer is resolved by {how}, never by sending a new token"


def absence_rule(caps: Capabilities, create_deadline: timedelta) -> str | None:
    """When a lookup that finds nothing proves that no job exists, or None without a lookup."""
    if not caps.lookup:
        return None
    window = caps.absent_after
    if window is None:
        return (
            "a lookup that finds nothing never proves that no job exists: after a lost create "
            "answer the lookup cannot resolve, a person decides at the create deadline "
            "(needs_human); nothing is sent again on its own"
        )
    shown = format_duration(timedelta(seconds=window))
    rule = (
        f"at-most-once holds if a new job is visible in the lookup within {shown}: a lookup "
        f"that finds nothing proves no job exists only {shown} after the create was last "
        "sent; until then jobtrail looks again"
    )
    if window >= create_deadline.total_seconds():
        rule += (
            f", and the create deadline ({format_duration(create_deadline)}) comes first, so "
            "such a miss goes to a person (needs_human) instead"
        )
    return rule


def takeover_rule(
    caps: Capabilities, create_deadline: timedelta, call_timeout: timedelta
) -> str | None:
    """What becomes of a create whose worker died mid-call when the create deadline is
    shorter than the takeover can take (core/leases.effect_lease), or None when it is not."""
    least = timedelta(seconds=effect_lease(0.0, call_timeout.total_seconds()))
    if create_deadline >= least:
        return None
    then = (
        "looked up once past its deadline (the job adopted if the lookup finds it) before a "
        "person is asked (needs_human)"
        if caps.lookup
        else "left to a person (needs_human) when it is taken over"
    )
    return (
        f"the create deadline ({format_duration(create_deadline)}) is shorter than a takeover "
        f"after a worker dies mid-create (at least {format_duration(least)}: twice the call "
        f"timeout of {format_duration(call_timeout)} and a second, or the worker's --lease if "
        f"longer): such a create is {then}; it is never sent again"
    )


TIER_NAMES = {
    Tier.TOKEN: "the provider's own token",
    Tier.FILTER: "a server-side filter on our reference",
    Tier.SCAN: "a bounded scan of a listing",
    Tier.NONE: "none (in doubt)",
}


def tier_rule(caps: Capabilities, create_deadline: timedelta) -> str:
    """How a lost create answer is resolved, and the limits of it, in one sentence: the
    words `provider check` says beside "reconciliation tier"."""
    tier = caps.tier
    deadline = format_duration(create_deadline)
    if tier is Tier.TOKEN and caps.idempotency is Idempotency.NATURAL:
        return (
            f"{TIER_NAMES[tier]}, the request itself: after a lost create answer jobtrail "
            "sends the same PUT or DELETE again to the same client-chosen URL, idempotent by "
            f"nature, until the create deadline ({deadline})"
        )
    if tier is Tier.TOKEN:
        means = (
            "sends the create again under the same token, which the provider answers with the "
            "job it made"
            if caps.same_token_retry
            else "looks the job up by the token"
        )
        if caps.token_kept_for is None:
            kept = "the provider documents no limit on how long it keeps the token"
        else:
            kept = f"the provider keeps the token {format_duration(_seconds(caps.token_kept_for))}"
        text = (
            f"{TIER_NAMES[tier]}: after a lost create answer jobtrail {means}; provable while "
            f"the provider remembers the token ({kept}), and jobtrail stops retrying at the "
            f"create deadline ({deadline})"
        )
        if caps.list_by_reference:
            text += ", looking the job up by its reference when retries stay unreadable"
        return text
    if tier is Tier.NONE:
        return (
            f"{TIER_NAMES[tier]}: nothing can find a job whose create answer was lost, so the "
            "operation stops for a person (needs_human); jobtrail never resubmits it on its own, "
            "whatever its method (its HTTP client re-sends nothing)"
        )
    window = (
        "never, so a miss goes to a person at the create deadline"
        if caps.absent_after is None
        else f"{format_duration(_seconds(caps.absent_after))} after the create was last sent"
    )
    if tier is Tier.FILTER:
        return (
            f"{TIER_NAMES[tier]}: the provider lists only the jobs holding the operation id, "
            f"so the lookup names ours, or proves that none exists {window}"
        )
    pages = caps.scan_pages or 1
    within = format_duration(_seconds(caps.scan_seconds or 0))
    return (
        f"{TIER_NAMES[tier]}: the lookup reads at most {pages} page{'s' if pages > 1 else ''} "
        f"of the newest jobs within {within}, matching the operation id on our side; a miss "
        "proves no job exists only if the scan reached jobs older than the create "
        f"({window}); at the cap the operation stops in doubt for a person (needs_human)"
    )


def deadline_rule(declared: RemoteDeadline | None) -> str:
    """Whether remote work stops by itself at the deadline, or only when it is cancelled."""
    if declared is None:
        return (
            "remote work stops only when it is cancelled: the provider takes no deadline of "
            "its own (after the result deadline the job may still run: `jobtrail cancel`)"
        )
    return (
        "remote work stops by itself: jobtrail writes the result deadline, rounded down to "
        f"what the provider accepts, in {declared.describe()} at submit (a result deadline "
        "shorter than the least it accepts is not written: then only a cancel stops it)"
    )


def _seconds(value: float) -> timedelta:
    return timedelta(seconds=value)


def token_outlived(caps: Capabilities, create_deadline: timedelta) -> str | None:
    """Why a create deadline is refused: retries under one token until then would outlive
    the provider's memory of it (and could make a second job); None when it fits."""
    kept = caps.token_kept_for
    if kept is None or create_deadline.total_seconds() <= kept:
        return None
    return (
        f"the create deadline ({format_duration(create_deadline)}) is longer than the provider "
        f"remembers a create token ({format_duration(_seconds(kept))}): a retry after that "
        "could make a second job; give a shorter create deadline"
    )


def lookup_name(op: Operation, request: Json) -> str:
    """What one lookup call of `op` was, named by the tier it used and, for a GET by our key,
    by the key its recorded `request` holds: "lookup by our token", "lookup by a
    server-side filter on our reference", "scan of a listing for our reference"."""
    match op.capabilities.lookup_tier:
        case Tier.TOKEN:
            sent = request if isinstance(request, str) else json.dumps(request, default=str)
            if op.idempotency_token in sent:
                return "lookup by our token"
            if op.operation_id in sent:
                return "lookup by our operation id"
            return "lookup by our key"
        case Tier.FILTER:
            return f"lookup by {TIER_NAMES[Tier.FILTER]}"
        case Tier.SCAN:
            return "scan of a listing for our reference"
    return "lookup"
