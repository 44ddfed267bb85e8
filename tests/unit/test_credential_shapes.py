"""What core/redact.py takes for a credential by its name or shape (issue 36), and what it
leaves alone: short credential words count only as a whole part of a name, and a value is a
credential only as a whole bearer token or JWT."""

from __future__ import annotations

import pytest

from jobtrail.core.redact import PREFIX, Redactor, credential_named, looks_like_credential

SECRET = "tok_live_5f2c9a8e7d6b4a31-DO-NOT-LEAK"


@pytest.mark.parametrize(
    "name",
    ["X-Sig", "X-Hmac", "X-OTP", "X-Private", "X-Hub-Hmac-Sha256", "X-MFA-Code", "X-Api-Key"],
)
def test_a_credential_name(name: str) -> None:
    assert credential_named(name) and Redactor().is_sensitive_header(name)


@pytest.mark.parametrize("name", ["X-Footprint", "X-Design-Id", "X-Signal-Strength", "Accept"])
def test_a_name_that_only_contains_the_letters(name: str) -> None:
    assert not credential_named(name)


@pytest.mark.parametrize(
    "value",
    [
        "Bearer b3arer-Vq8Lx2Nw7Kd4Rm9Tz6Hc",
        "bearer   abcdefghijklmnop",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJyZXBvcnRzIn0.c2lnbmF0dXJl",
    ],
)
def test_a_credential_shaped_value(value: str) -> None:
    assert looks_like_credential(value)


@pytest.mark.parametrize(
    "value", ["Bearer of bad news", "the Bearer abcdefghijklmnop is here", "eyJ alone", ""]
)
def test_text_that_merely_mentions_one(value: str) -> None:
    assert not looks_like_credential(value)


def test_a_long_beginning_of_a_secret_is_held_wherever_it_is() -> None:
    """`holds_secret` is `text`'s rule without the truncated tail: a beginning of PREFIX
    characters or more anywhere, a 16-character run, the whole; not a short tail."""
    r = Redactor().extended(values=[SECRET])
    for n in (PREFIX, 17, 20, len(SECRET)):
        assert r.holds_secret(f"note {SECRET[:n]} more"), n
    assert r.holds_secret(f"x{SECRET[5:21]}y")
    assert not r.holds_secret(f"ends with {SECRET[:6]}")
    assert r.text(f"ends with {SECRET[:6]}") == "ends with [redacted]"  # recorded text, cut
