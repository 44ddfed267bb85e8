"""Credentials that expire: a token printed by a command (`az account get-access-token
--query accessToken -o tsv`, `gcloud auth print-access-token`) or read from a file, instead
of one held in an environment variable (`auth` in docs/providers.md).

The token is fetched when a call needs it and kept in this process's memory only, until it
expires: the declared `lifetime`, or the JWT's `exp` claim when the token is a JWT (the
earlier of the two), less a margin, so that a call does not leave with a token about to
lapse. A 401 answer drops it, and the provider fetches a fresh one (http.py decides whether
the call may be sent again). The token is never stored, logged or shown: every value
fetched is remembered here for the redaction chokepoint (redaction.py), which learns it
like any other secret in use.

The command runs without a shell (the argument list as written in the provider file), with
no standard input and a timeout. Its failure is an error naming the program and its exit
status. Neither its output nor its arguments are ever shown: either may hold a secret (a
`client_secret=…` on a `curl` line), and every failing fetch is explained on every surface.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from jobtrail.errors import JobtrailError


@dataclass(frozen=True, kw_only=True)
class Auth:
    """Where the credential comes from: an environment variable (`env`), or, for a token
    that expires, a command that prints one or a file that holds one (providers/http/tokens.py)."""

    header: str
    env: str | None = None
    prefix: str = ""
    command: tuple[str, ...] = ()
    file: str | None = None
    lifetime: timedelta | None = None  # how long a fetched token lasts (a JWT says itself)
    timeout: timedelta = timedelta(seconds=30)  # the longest the command may take

    @property
    def fetched(self) -> bool:
        """A token fetched when needed (a command or a file), not read from the environment."""
        return bool(self.command) or self.file is not None

    @property
    def program(self) -> str:
        """The token command's program as the provider file names it, and only that: its
        arguments may hold a secret, so no message shows them."""
        return f"`{self.command[0]}` (its arguments not shown)" if self.command else ""

    def describe(self) -> str:
        if self.command:
            return f"the token printed by the command {self.program}"
        if self.file is not None:
            return f"the token in the file {self.file}"
        return f"${self.env}"


# Without a declared lifetime or a JWT `exp`, a fetched token is used this long at most.
DEFAULT_LIFETIME = 300.0
MARGIN = 60.0  # a token is renewed this long before it expires (a quarter of short lives)
MAX_TOKEN_BYTES = 64 * 1024
_REMEMBERED = 8  # values kept per source for redaction: the current one and a few before


class TokenUnavailable(JobtrailError):
    """The token command failed, or the token file could not be read; nothing was sent."""


@dataclass(frozen=True, kw_only=True)
class Token:
    value: str
    fetched_at: float
    expires_at: float

    def usable(self, now: float) -> bool:
        margin = min(MARGIN, (self.expires_at - self.fetched_at) / 4)
        return now < self.expires_at - margin


def source_key(auth: Auth) -> str:
    """What names one token source: its command or file, and the lifetime declared."""
    return json.dumps([list(auth.command), auth.file], separators=(",", ":"))


_KNOWN: dict[str, deque[str]] = {}


def remember(key: str, value: str) -> None:
    """Keep `value` (just fetched) among the values redacted for its source."""
    values = _KNOWN.setdefault(key, deque(maxlen=_REMEMBERED))
    if value not in values:
        values.append(value)


def known_values(auth: Auth | None) -> tuple[str, ...]:
    """The token values this process fetched for `auth`'s source, for redaction."""
    if auth is None or not auth.fetched:
        return ()
    return tuple(_KNOWN.get(source_key(auth), ()))


def jwt_expiry(value: str) -> float | None:
    """The `exp` claim (seconds since the epoch) of a JWT, or None when `value` is not one.
    The signature is not checked: the provider does that; this only says when to renew."""
    parts = value.split(".")
    if len(parts) != 3:
        return None
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload.encode("ascii")))
    except (ValueError, UnicodeError):
        return None
    exp = claims.get("exp") if isinstance(claims, dict) else None
    if isinstance(exp, int | float) and not isinstance(exp, bool):
        return float(exp)
    return None


class TokenSource:
    """One provider's expiring token: fetched when needed, kept until it expires."""

    def __init__(self, auth: Auth, clock: Callable[[], float] = time.time) -> None:
        self.auth, self._clock = auth, clock
        self._key = source_key(auth)
        self._token: Token | None = None
        self._locks: dict[int, asyncio.Lock] = {}

    async def get(self) -> str:
        """A token that is not about to expire: the cached one, or a fresh one."""
        token = self._token
        if token is not None and token.usable(self._clock()):
            return token.value
        async with self._lock():
            token = self._token
            if token is not None and token.usable(self._clock()):
                return token.value  # another call fetched it while this one waited
            return await self._fetch()

    async def refresh(self, refused: str) -> str:
        """A fresh token after `refused` was answered 401 (unless another call has already
        replaced it)."""
        async with self._lock():
            token = self._token
            if token is not None and token.value != refused:
                return token.value
            self._token = None
            return await self._fetch()

    def drop(self, refused: str) -> None:
        """Forget `refused` (answered 401): the next call fetches a fresh token."""
        if self._token is not None and self._token.value == refused:
            self._token = None

    def _lock(self) -> asyncio.Lock:
        # one lock per event loop: a source may outlive the loop that first used it
        loop = id(asyncio.get_running_loop())
        lock = self._locks.get(loop)
        if lock is None:
            self._locks.clear()
            lock = self._locks[loop] = asyncio.Lock()
        return lock

    async def _fetch(self) -> str:
        fetched_at = self._clock()
        raw = await self._run() if self.auth.command else self._read()
        value = raw.strip()
        if not value or not value.isprintable() or any(c.isspace() for c in value):
            raise TokenUnavailable(
                f"the {self._what()} gave no token (one line of text without spaces is "
                "expected); its output is not shown, since it may hold a secret"
            )
        remember(self._key, value)
        lifetime = self.auth.lifetime.total_seconds() if self.auth.lifetime else None
        expires = [fetched_at + (lifetime if lifetime is not None else DEFAULT_LIFETIME)]
        exp = jwt_expiry(value)
        if exp is not None:
            expires = [exp] if lifetime is None else [exp, fetched_at + lifetime]
        self._token = Token(value=value, fetched_at=fetched_at, expires_at=min(expires))
        return value

    def _what(self) -> str:
        if self.auth.command:
            return f"token command {self.auth.program}"
        return f"token file {self.auth.file}"

    async def _run(self) -> str:
        command = self.auth.command
        seconds = self.auth.timeout.total_seconds()
        try:
            process = await asyncio.create_subprocess_exec(
                *command,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
            )
        except FileNotFoundError:
            raise TokenUnavailable(
                f"the {self._what()} cannot run: its program was not found (is it "
                "installed, and on PATH?)"
            ) from None
        except OSError as exc:
            raise TokenUnavailable(
                f"the {self._what()} cannot run: {exc.strerror or type(exc).__name__}"
            ) from None
        try:
            out, _ = await asyncio.wait_for(process.communicate(), timeout=seconds)
        except TimeoutError:
            process.kill()
            await process.wait()
            raise TokenUnavailable(
                f"the {self._what()} gave no token within {seconds:g}s and was stopped"
            ) from None
        if process.returncode != 0:
            raise TokenUnavailable(
                f"the {self._what()} failed (exit status {process.returncode}); its output "
                "is not shown, since it may hold a secret"
            )
        if len(out) > MAX_TOKEN_BYTES:
            raise TokenUnavailable(f"the {self._what()} printed more than {MAX_TOKEN_BYTES} bytes")
        return out.decode("utf-8", errors="replace")

    def _read(self) -> str:  # a small local file: read on the loop, like a config file
        assert self.auth.file is not None
        path = Path(self.auth.file).expanduser()
        try:
            with path.open("rb") as handle:
                data = handle.read(MAX_TOKEN_BYTES + 1)
        except OSError as exc:
            raise TokenUnavailable(
                f"the {self._what()} cannot be read: {exc.strerror or type(exc).__name__}"
            ) from None
        if len(data) > MAX_TOKEN_BYTES:
            raise TokenUnavailable(f"the {self._what()} is larger than {MAX_TOKEN_BYTES} bytes")
        return data.decode("utf-8", errors="replace")
