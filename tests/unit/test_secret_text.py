"""Pure checks of how secrets are masked in text: ledger URLs and redacted values."""

from __future__ import annotations

import pytest

from jobtrail.core.redact import REDACTED, Redactor
from jobtrail.store.urls import shown_url, url_passwords

SECRET = "tok_live_5f2c9a8e7d6b4a31-DO-NOT-LEAK"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://u:SECRETPW@h:5432/db", "postgresql://u:[redacted]@h:5432/db"),
        ("postgres://u:p@ss/w@h/db?options=x", "postgres://u:[redacted]@h/db?options=x"),
        (
            "postgresql://h/db?user=u&password=SECRETPW&a=1",
            "postgresql://h/db?user=u&password=[redacted]&a=1",
        ),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
        ("/tmp/a@b/ledger.db", "/tmp/a@b/ledger.db"),
    ],
)
def test_a_ledger_url_is_shown_without_its_password(url: str, shown: str) -> None:
    """The password goes, wherever it is written; the rest of the URL stays readable."""
    assert shown_url(url) == shown


def test_url_passwords_are_known_as_written_and_decoded() -> None:
    """A percent-encoded password is masked in both its forms."""
    assert url_passwords("postgresql://u:pw%40x@h/db") == ["pw%40x", "pw@x"]


@pytest.mark.parametrize(
    "text",
    [
        f"a {SECRET} b",
        f"truncated: {SECRET[:20]}",  # what `reason[:200]` may leave
        f"stated {SECRET[:16]}…, content hashes to 00",  # a fragment inside the text
        f"{SECRET[3:30]}zz",
    ],
)
def test_a_secret_or_what_truncation_left_of_it_is_redacted(text: str) -> None:
    """The whole secret, a run of 16 of its characters, or a beginning that ends the text."""
    out = Redactor().extended(values=[SECRET]).text(text)
    assert REDACTED in out and not any(SECRET[i : i + 8] in out for i in range(len(SECRET) - 7))


def test_keys_and_stored_bytes_are_redacted_too() -> None:
    """A secret used as a JSON key, or inside a result's bytes, is replaced."""
    r = Redactor().extended(values=[SECRET])
    assert r.json({SECRET: 1}) == {REDACTED: 1}
    assert r.content(f"id,{SECRET}\n".encode()) == (f"id,{REDACTED}\n".encode(), 1)
