"""When to call again: Retry-After wins, otherwise capped exponential backoff with jitter."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime

MAX_RETRY_AFTER = 30 * 86400


@dataclass(frozen=True, kw_only=True)
class Backoff:
    """About base, 2*base, 4*base ... up to cap, each scaled by a random factor in
    [1 - jitter, 1 + jitter] so that many operations never poll in lockstep."""

    base: float = 2.0
    cap: float = 60.0
    jitter: float = 0.2

    def delay(self, attempt: int, rand: random.Random) -> timedelta:
        raw = min(self.cap, self.base * (2 ** min(attempt, 32)))
        factor = 1.0 + self.jitter * (2.0 * rand.random() - 1.0)
        return timedelta(seconds=min(self.cap, raw * factor))


def parse_retry_after(value: str | None, now: datetime) -> datetime | None:
    """Retry-After as delay-seconds or HTTP-date (RFC 9110 10.2.3); None when absent or
    unreadable. A date in the past means "now"."""
    if value is None:
        return None
    text = value.strip()
    if text.isascii() and text.isdigit():
        # Deadlines bound every wait anyway; the clamp only keeps the arithmetic in range.
        return now + timedelta(seconds=min(int(text), MAX_RETRY_AFTER))
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(when, now)


def next_call_at(
    *,
    now: datetime,
    attempt: int,
    retry_after: str | None,
    backoff: Backoff,
    rand: random.Random,
) -> datetime:
    """The time of the next call: the provider's Retry-After if it gave one, else backoff."""
    hinted = parse_retry_after(retry_after, now)
    if hinted is not None:
        return hinted
    return now + backoff.delay(attempt, rand)
