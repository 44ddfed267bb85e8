"""Expiring tokens (providers/http/tokens.py): a real command or file, fetched when needed, kept
until its lifetime or its JWT `exp` (less a margin), fetched again after a 401, remembered
for redaction, and a failure that names the command but never shows its output."""

from __future__ import annotations

import base64
import json
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from jobtrail.providers.file.spec import Auth
from jobtrail.providers.http.tokens import (
    DEFAULT_LIFETIME,
    TokenSource,
    TokenUnavailable,
    jwt_expiry,
    known_values,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def counting(tmp_path: Path, printed: str) -> tuple[Auth, Path]:
    """A command that prints `printed` (with the run's number for `{n}`) and counts its runs."""
    count = tmp_path / "runs"
    script = (
        "import pathlib, sys; p = pathlib.Path(sys.argv[1]); "
        "n = int(p.read_text()) + 1 if p.exists() else 1; p.write_text(str(n)); "
        f"print({printed!r}.replace('{{n}}', str(n)))"
    )
    return Auth(header="Authorization", command=(sys.executable, "-c", script, str(count))), count


def jwt(exp: float) -> str:
    def part(value: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'HS256'})}.{part({'sub': 'me', 'exp': exp})}.c2ln"


async def test_a_token_is_fetched_once_and_kept_until_its_lifetime(tmp_path: Path) -> None:
    auth, count = counting(tmp_path, "tok-run-{n}-abcdefgh")
    clock = Clock()
    source = TokenSource(Auth(**{**auth.__dict__, "lifetime": timedelta(seconds=400)}), clock)
    assert await source.get() == "tok-run-1-abcdefgh"
    clock.now += 299  # before lifetime less the margin (60 s)
    assert await source.get() == "tok-run-1-abcdefgh"
    clock.now += 60
    assert await source.get() == "tok-run-2-abcdefgh"
    assert count.read_text() == "2"


async def test_without_a_lifetime_a_plain_token_lasts_the_default(tmp_path: Path) -> None:
    auth, _ = counting(tmp_path, "plain-token-{n}-xyz")
    clock = Clock()
    source = TokenSource(auth, clock)
    await source.get()
    clock.now += DEFAULT_LIFETIME - 61
    assert await source.get() == "plain-token-1-xyz"
    clock.now += 2
    assert await source.get() == "plain-token-2-xyz"


async def test_a_jwt_is_kept_until_its_exp(tmp_path: Path) -> None:
    """A JWT lasting 40 s is renewed 10 s before (a quarter of its life), not after 5 min."""
    clock = Clock()
    token = jwt(clock.now + 40)
    auth, count = counting(tmp_path, token)
    source = TokenSource(auth, clock)
    assert await source.get() == token
    clock.now += 29
    await source.get()
    assert count.read_text() == "1"
    clock.now += 2
    await source.get()
    assert count.read_text() == "2"


async def test_a_refused_token_is_replaced_once(tmp_path: Path) -> None:
    """After a 401 a fresh token comes; a second caller with the same refused token gets
    that fresh one, without another run of the command."""
    auth, count = counting(tmp_path, "tok-{n}-0123456789")
    source = TokenSource(auth, Clock())
    first = await source.get()
    fresh = await source.refresh(first)
    assert fresh == "tok-2-0123456789"
    assert await source.refresh(first) == fresh
    assert count.read_text() == "2"
    source.drop(fresh)
    assert await source.get() == "tok-3-0123456789"


async def test_fetched_tokens_are_known_for_redaction(tmp_path: Path) -> None:
    auth, _ = counting(tmp_path, "secret-token-{n}-for-redaction")
    source = TokenSource(auth, Clock())
    value = await source.get()
    assert value in known_values(auth)
    assert known_values(Auth(header="Authorization", env="X")) == ()


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("import sys; print('s3' + 'cr3t-in-output'); sys.exit(3)", r"failed \(exit status 3\)"),
        ("print('')", "gave no token"),
        ("print('two words')", "gave no token"),
        ("import time; time.sleep(30)", "within 1s and was stopped"),
    ],
)
async def test_a_failing_command_is_named_and_its_output_never_shown(
    code: str, message: str
) -> None:
    auth = Auth(
        header="Authorization", command=(sys.executable, "-c", code), timeout=timedelta(seconds=1)
    )
    with pytest.raises(TokenUnavailable, match=message) as failure:
        await TokenSource(auth).get()
    assert sys.executable in str(failure.value)  # the program is named
    assert "s3cr3t" not in str(failure.value)
    assert code not in str(failure.value)  # never its arguments: they may hold a secret


async def test_a_missing_program_is_named() -> None:
    auth = Auth(header="Authorization", command=("no-such-token-program-here", "print"))
    with pytest.raises(TokenUnavailable, match=r"`no-such-token-program-here` .* not found"):
        await TokenSource(auth).get()


async def test_a_token_file_is_read_again_once_expired(tmp_path: Path) -> None:
    file = tmp_path / "token"
    file.write_text("file-token-one-abcdef\n")
    clock = Clock()
    source = TokenSource(
        Auth(header="Authorization", file=str(file), lifetime=timedelta(seconds=100)), clock
    )
    assert await source.get() == "file-token-one-abcdef"
    file.write_text("file-token-two-abcdef\n")
    assert await source.get() == "file-token-one-abcdef"  # still in force
    clock.now += 80
    assert await source.get() == "file-token-two-abcdef"
    file.unlink()
    clock.now += 100
    with pytest.raises(TokenUnavailable, match="cannot be read"):
        await source.get()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (jwt(1234.5), 1234.5),
        ("not-a-jwt", None),
        ("a.b.c", None),
        (jwt("soon"), None),  # type: ignore[arg-type]
    ],
)
def test_jwt_expiry(value: str, expected: float | None) -> None:
    assert jwt_expiry(value) == expected
