"""What an operator scrapes (`GET /metrics`, the Prometheus text format 0.0.4), from the
ledger's counts alone: so every process serving one ledger says the same numbers, and they
agree with `jobtrail list`. The counts are read by the ledger (`Ledger.metric_counts`);
this module only classifies and renders them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from jobtrail.core.lateness import cumulative
from jobtrail.core.model import Capabilities, Tier
from jobtrail.core.nextstep import PERSON_STATES
from jobtrail.core.states import State

# An attempt's stored outcome word, as one of four classes of a call's answer.
_ACCEPTED = frozenset(
    {"accepted", "sync_result", "observed", "found", "cancel_acknowledged", "result_checked"}
)
_REFUSED = frozenset({"rejected", "result_missing"})


def call_class(outcome: str | None) -> str:
    """accepted, refused, throttled or unknown (no outcome recorded, or an ambiguous one)."""
    if outcome in _ACCEPTED:
        return "accepted"
    if outcome in _REFUSED:
        return "refused"
    if outcome == "throttled":
        return "throttled"
    return "unknown"


def settling_tier(state: str, caps: Capabilities) -> Tier:
    """The reconciliation tier (core/proof.py TIER_NAMES) that settles an operation in
    `state`: in create_unknown the provider's best means (a same-token retry first), in
    reconciliation the tier its lookup call uses."""
    return caps.lookup_tier if state == "reconciliation" else caps.tier


@dataclass(frozen=True, kw_only=True)
class LedgerCounts:
    """The ledger's counts at one moment (`now`, on the ledger's clock)."""

    now: datetime
    operations: Mapping[tuple[str, str], int] = field(default_factory=dict)  # (state, provider)
    # (kind, provider, stored outcome or None); folded status reads counted in `reads`
    attempts: Mapping[tuple[str, str, str | None], int] = field(default_factory=dict)
    folded_reads: Mapping[str, int] = field(default_factory=dict)  # provider -> reads folded
    next_due: datetime | None = None
    notice_backlog: int = 0
    # (state, tier) -> operations in create_unknown or reconciliation (`settling_tier`)
    unsettled_tiers: Mapping[tuple[str, str], int] = field(default_factory=dict)
    census: Mapping[str, int] = field(default_factory=dict)  # finding -> count (the census')
    # (provider, le) -> (status reads in that bucket alone, their lateness in seconds), as
    # the workers added them (core/lateness.py)
    lateness: Mapping[tuple[str, str], tuple[int, float]] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Histogram:
    """One provider's poll lateness: cumulative (le, reads at or below it), ending +Inf."""

    buckets: list[tuple[str, int]]
    count: int
    sum: float


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _family(name: str, kind: str, text: str, samples: Iterable[tuple[str, float]]) -> list[str]:
    lines = [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
    lines += [f"{name}{labels} {value:g}" for labels, value in samples]
    return lines


def _labels(**values: str) -> str:
    return "{" + ",".join(f'{k}="{_label(v)}"' for k, v in values.items()) + "}"


def needing_person(c: LedgerCounts) -> int:
    return sum(n for (state, _), n in c.operations.items() if State(state) in PERSON_STATES)


def calls_by_class(c: LedgerCounts) -> dict[tuple[str, str, str], int]:
    """(kind, provider, outcome class) -> calls, folded status reads included."""
    calls: dict[tuple[str, str, str], int] = {}
    for (kind, provider, outcome), n in c.attempts.items():
        key = (kind, provider, call_class(outcome))
        calls[key] = calls.get(key, 0) + n
    for provider, n in c.folded_reads.items():
        key = ("status", provider, "accepted")
        calls[key] = calls.get(key, 0) + n
    return calls


def due_lateness(c: LedgerCounts) -> float:
    return 0.0 if c.next_due is None else max(0.0, (c.now - c.next_due).total_seconds())


def poll_lateness(c: LedgerCounts) -> dict[str, Histogram]:
    """provider -> its poll lateness histogram, from the stored buckets."""
    stored: dict[str, dict[str, tuple[int, float]]] = {}
    for (provider, le), counted in c.lateness.items():
        stored.setdefault(provider, {})[le] = counted
    return {
        provider: Histogram(
            buckets=cumulative({le: n for le, (n, _) in rows.items()}),
            count=sum(n for n, _ in rows.values()),
            sum=sum(seconds for _, seconds in rows.values()),
        )
        for provider, rows in sorted(stored.items())
    }


def _histogram(name: str, text: str, found: Mapping[str, Histogram]) -> list[str]:
    """A histogram family; the sum exact (repr), not to six digits as the other values."""
    lines = [f"# HELP {name} {text}", f"# TYPE {name} histogram"]
    for provider, h in found.items():
        lines += [f"{name}_bucket{_labels(provider=provider, le=le)} {n}" for le, n in h.buckets]
        lines += [
            f"{name}_sum{_labels(provider=provider)} {h.sum!r}",
            f"{name}_count{_labels(provider=provider)} {h.count}",
        ]
    return lines


def render(c: LedgerCounts) -> str:
    """The Prometheus text exposition of `c`."""
    ops = sorted(c.operations.items())
    person, calls, late = needing_person(c), calls_by_class(c), due_lateness(c)
    unsettled = [(k, n) for k, n in ops if k[0] in ("create_unknown", "reconciliation")]
    lines = [
        *_family(
            "jobtrail_operations", "gauge", "Operations by local state and provider.",
            ((_labels(state=s, provider=p), n) for (s, p), n in ops),
        ),
        *_family(
            "jobtrail_operations_needing_person", "gauge",
            "Operations waiting for a person (needs_human, cancellation_unconfirmed, "
            "result_validation_failed, result_timed_out).", [("", person)],
        ),
        *_family(
            "jobtrail_oldest_due_lateness_seconds", "gauge",
            "How long the earliest due operation has been due (0: none is late).",
            [("", late)],
        ),
        *_histogram(
            "jobtrail_poll_lateness_seconds",
            "How long after its due time each status read started, by provider (counted by "
            "the workers, added to the ledger every few seconds).", poll_lateness(c),
        ),
        *_family(
            "jobtrail_calls_total", "counter",
            "Calls made to providers, by kind, provider and outcome class (accepted, refused, "
            "throttled, unknown); folded status reads included.",
            ((_labels(kind=k, provider=p, outcome=o), n) for (k, p, o), n in sorted(calls.items())),
        ),
        *_family(
            "jobtrail_create_unsettled", "gauge",
            "Operations whose create outcome is being settled (create_unknown, reconciliation).",
            ((_labels(state=s, provider=p), n) for (s, p), n in unsettled),
        ),
        *_family(
            "jobtrail_create_unsettled_by_tier", "gauge",
            "Operations whose create outcome is being settled, by state and the reconciliation "
            "tier settling it (token, filter, scan, none).",
            ((_labels(state=s, tier=t), n) for (s, t), n in sorted(c.unsettled_tiers.items())),
        ),
        *_family(
            "jobtrail_notice_backlog", "gauge", "Notices to people waiting for delivery.",
            [("", c.notice_backlog)],
        ),
        *_family(
            "jobtrail_census_findings", "gauge", "The last census' findings, by kind.",
            ((_labels(finding=f), n) for f, n in sorted(c.census.items())),
        ),
    ]  # fmt: skip
    return "\n".join(lines) + "\n"
