"""Poll scheduling: Retry-After wins; otherwise capped exponential backoff with jitter."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from jobtrail.core.schedule import Backoff, next_call_at, parse_retry_after

NOW = datetime(2025, 3, 8, 14, 0, 0, tzinfo=UTC)


def test_backoff_grows_about_2_4_8_seconds() -> None:
    """Without hints the delays are near 2 s, 4 s, 8 s, ... within the jitter band."""
    backoff, rand = Backoff(base=2, cap=60, jitter=0.2), random.Random(1)
    for attempt, nominal in enumerate([2, 4, 8, 16, 32]):
        seconds = backoff.delay(attempt, rand).total_seconds()
        assert nominal * 0.8 <= seconds <= nominal * 1.2


def test_backoff_is_capped() -> None:
    """Late attempts never wait longer than the configured cap."""
    backoff = Backoff(base=2, cap=30, jitter=0.2)
    assert all(backoff.delay(n, random.Random(n)).total_seconds() <= 30 for n in range(40))


def test_jitter_comes_from_the_injected_random_source() -> None:
    """The same seed gives the same schedule; different seeds spread polls apart."""
    backoff = Backoff()
    same = [backoff.delay(3, random.Random(7)) for _ in range(2)]
    assert same[0] == same[1]
    spread = {backoff.delay(3, random.Random(seed)) for seed in range(20)}
    assert len(spread) > 10


def test_retry_after_seconds_wins_over_backoff() -> None:
    """A Retry-After in seconds sets the next call exactly."""
    at = next_call_at(now=NOW, attempt=0, retry_after="7", backoff=Backoff(), rand=random.Random())
    assert at == NOW + timedelta(seconds=7)


def test_retry_after_http_date_wins_over_backoff() -> None:
    """A Retry-After HTTP-date sets the next call at that date."""
    at = next_call_at(
        now=NOW,
        attempt=5,
        retry_after="Sat, 08 Mar 2025 14:01:30 GMT",
        backoff=Backoff(),
        rand=random.Random(),
    )
    assert at == datetime(2025, 3, 8, 14, 1, 30, tzinfo=UTC)


def test_past_or_unreadable_retry_after() -> None:
    """A date in the past means now; garbage is ignored (backoff applies)."""
    assert parse_retry_after("Sat, 08 Mar 2025 13:00:00 GMT", NOW) == NOW
    assert parse_retry_after("soon", NOW) is None
    assert parse_retry_after(None, NOW) is None


@given(st.text(max_size=40))
def test_retry_after_parser_never_raises(value: str) -> None:
    """Any header value parses to a time not before now, or to nothing."""
    parsed = parse_retry_after(value, NOW)
    assert parsed is None or parsed >= NOW
