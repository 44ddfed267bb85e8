"""Poll lateness as a histogram: how long after its due time each status read started.

A worker counts its reads in memory (`Tally`), per provider and bucket, and adds the counts
to the ledger every few seconds (services/lateness.py) in one statement; the ledger sums
every worker's counts, and `/metrics` renders them as a Prometheus histogram (`cumulative`).
A bucket is stored by its upper bound's label (`le`) and holds the reads that fell in it
alone, not those below: counts kept that way are added, never recomputed, when several
workers write the same rows.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from jobtrail.core.model import AttemptKind, Operation

BOUNDS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)  # seconds; then +Inf
INF = "+Inf"


def le_label(bound: float) -> str:
    """A bound as Prometheus writes it: `1`, `0.25`, `+Inf`."""
    return INF if math.isinf(bound) else f"{bound:g}"


LABELS = (*(le_label(b) for b in BOUNDS), INF)


def le_of(seconds: float) -> str:
    """The label of the bucket a lateness of `seconds` falls in (its upper bound, `le`)."""
    return LABELS[bisect_left(BOUNDS, seconds)]


def lateness(started: datetime, due: datetime) -> float:
    """Seconds from `due` to `started`; a read started early (asked for, or `run`) is 0."""
    return max(0.0, (started - due).total_seconds())


@dataclass(frozen=True, kw_only=True)
class LatenessCount:
    """What one bucket of one provider gained: `n` reads, `seconds` of lateness in all."""

    provider: str
    le: str
    n: int
    seconds: float


@dataclass
class Tally:
    """The reads a worker counted since it last gave them to the ledger. Counted on every
    status read, so kept to a dictionary lookup and two additions."""

    counts: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # [n, seconds]

    def read(self, op: Operation, kind: AttemptKind, started: datetime) -> None:
        """Count a call of `kind` on `op` starting at `started` (the ledger's clock), if it
        is a status read that was due: late by the time since `op`'s next poll time."""
        if kind is AttemptKind.STATUS and op.next_poll_at is not None:
            self.observe(op.provider, lateness(started, op.next_poll_at))

    def observe(self, provider: str, seconds: float) -> None:
        key = (provider, LABELS[bisect_left(BOUNDS, seconds)])
        if (counted := self.counts.get(key)) is None:
            self.counts[key] = [1, seconds]
        else:
            counted[0] += 1
            counted[1] += seconds

    def take(self) -> list[LatenessCount]:
        """The counts so far, in key order (the order rows are written in), and a fresh
        start; `add` them back if they could not be written."""
        taken, self.counts = self.counts, {}
        return [
            LatenessCount(provider=provider, le=le, n=int(n), seconds=seconds)
            for (provider, le), (n, seconds) in sorted(taken.items())
        ]

    def add(self, counts: Iterable[LatenessCount]) -> None:
        for c in counts:
            counted = self.counts.setdefault((c.provider, c.le), [0, 0.0])
            counted[0] += c.n
            counted[1] += c.seconds


def cumulative(buckets: Mapping[str, int]) -> list[tuple[str, int]]:
    """Prometheus' buckets from stored ones (`le` -> reads in that bucket alone): every
    standard bound and any other stored (bounds changed since), each counting the reads at
    or below it, ending with +Inf (all of them)."""
    bounds = sorted({*LABELS, *buckets}, key=float)
    total, found = 0, []
    for le in bounds:
        total += buckets.get(le, 0)
        found.append((le, total))
    return found
