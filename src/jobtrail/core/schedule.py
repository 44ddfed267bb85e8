"""When to call again: Retry-After wins, otherwise capped exponential backoff with jitter.

Whatever is chosen, a provider cannot break the schedule (DESIGN rule 13): every wait lies
between a floor and a ceiling (`Bounds`, the provider file's `[poll] min` and `max`), and
the draft that stores it clamps it to the deadline in force (see `Draft.result`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime

MAX_RETRY_AFTER = 30 * 86400
# Nine digits are already years; longer numbers are never converted, so no provider can
# make us build a huge int (or trip Python's int-to-str digit limit) from a header.
_MAX_DIGITS = 9
# The longest HTTP-date ("Wednesday, 31-Dec-9999 23:59:59 GMT") is well under this.
_MAX_DATE_LENGTH = 64


@dataclass(frozen=True, kw_only=True)
class PollDefaults:
    """The poll schedule used where a provider file's `[poll]` table says nothing, kept in
    one place so the parser, the core and the docs cannot drift apart. Seconds throughout."""

    initial: float = 2.0  # first wait without a hint (`[poll] initial`)
    cap: float = 60.0  # longest backoff wait (`[poll] cap`)
    factor: float = 2.0  # each backoff wait is about `factor` times the last
    jitter: float = 0.2  # each wait is scaled by a random factor in [1 - jitter, 1 + jitter]
    min: float = 1.0  # floor of every wait, hints included (`[poll] min`)
    max: float = 3600.0  # ceiling of every wait, hints included (`[poll] max`)
    lowest_min: float = 0.001  # a smaller `[poll] min` would let `Retry-After: 0` spin
    not_found_grace: float = 30.0  # `[poll] not_found_grace`
    max_refused_reads: int = 5  # `[poll] max_refused_reads` (refused or unreadable reads)
    retry_initial: float = 1.0  # retries of a create or a cancel back off faster...
    retry_cap: float = 30.0  # ...and give up waiting longer sooner than polls


POLL_DEFAULTS = PollDefaults()


@dataclass(frozen=True, kw_only=True)
class Backoff:
    """About base, factor*base, factor²*base ... up to cap, each scaled by a random factor
    in [1 - jitter, 1 + jitter] so that many operations never poll in lockstep."""

    base: float = POLL_DEFAULTS.initial
    cap: float = POLL_DEFAULTS.cap
    factor: float = POLL_DEFAULTS.factor
    jitter: float = POLL_DEFAULTS.jitter

    def delay(self, attempt: int, rand: random.Random) -> timedelta:
        raw = min(self.cap, self.base * (self.factor ** min(max(attempt, 0), 32)))
        factor = 1.0 + self.jitter * (2.0 * rand.random() - 1.0)
        return timedelta(seconds=min(self.cap, raw * factor))


@dataclass(frozen=True, kw_only=True)
class Bounds:
    """Every wait between two calls lasts at least `floor` seconds (a `Retry-After: 0`
    included) and at most `ceiling` seconds (a Retry-After of a year included)."""

    floor: float = POLL_DEFAULTS.min
    ceiling: float = POLL_DEFAULTS.max

    def clamp(self, when: datetime, now: datetime) -> datetime:
        earliest = now + timedelta(seconds=self.floor)
        latest = now + timedelta(seconds=max(self.floor, self.ceiling))
        return min(max(when, earliest), latest)


@dataclass(frozen=True, kw_only=True)
class Refusals:
    """What refused status reads (4xx other than 408/425/429), and status answers that
    cannot be read as a state, lead to (see core/refused.py).

    A 404 while no status read has succeeded yet, within `not_found_grace` seconds of the
    first refusal, means "not visible yet" (providers answer 404 for a moment after a
    create) and does not count. Otherwise `limit` of them in a row stop automation."""

    not_found_grace: float = POLL_DEFAULTS.not_found_grace
    limit: int = POLL_DEFAULTS.max_refused_reads


def parse_retry_after(value: str | None, now: datetime) -> datetime | None:
    """Retry-After as delay-seconds or HTTP-date (RFC 9110 10.2.3); None when absent or
    unreadable (a negative number, a fraction, garbage). A date in the past means "now";
    anything further than MAX_RETRY_AFTER means MAX_RETRY_AFTER. Never raises."""
    if value is None:
        return None
    text = value.strip()
    limit = now + timedelta(seconds=MAX_RETRY_AFTER)
    if text.isascii() and text.isdigit():
        if len(text.lstrip("0")) > _MAX_DIGITS:
            return limit
        return now + timedelta(seconds=min(int(text), MAX_RETRY_AFTER))
    if len(text) > _MAX_DATE_LENGTH:
        return None
    try:
        when = parsedate_to_datetime(text)
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        # Compared before any conversion: a year-9999 date with a negative offset is a
        # valid datetime that cannot be converted to UTC.
        return max(min(when, limit), now).astimezone(UTC)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def next_call_at(
    *,
    now: datetime,
    attempt: int,
    retry_after: str | None,
    backoff: Backoff,
    rand: random.Random,
    bounds: Bounds | None = None,
    throttled: bool = False,
) -> datetime:
    """The time of the next call: the provider's Retry-After if it gave one, else backoff;
    either way inside `bounds`.

    A throttled call (429, 503 with Retry-After) backs off whatever its hint says: the hint
    is then the earliest time, not the time, so that `Retry-After: 0` (or 1) answered to
    every call cannot hold jobtrail to one call a second for hours."""
    hinted = parse_retry_after(retry_after, now)
    if hinted is None or throttled:
        backed_off = now + backoff.delay(attempt, rand)
        hinted = backed_off if hinted is None else max(hinted, backed_off)
    when = hinted
    return (bounds or Bounds()).clamp(when, now)
