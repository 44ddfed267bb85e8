"""Who may use the dashboard: operators, their roles, sessions and CSRF tokens; and who may
use the MCP tools over HTTP: agents, by the same token scheme (one piece of code for both).

Operators and agents come from the environment, like every other credential:

    JOBTRAIL_OPERATOR_TOKENS="alice:TOKEN,bob:TOKEN"   operators (may act)
    JOBTRAIL_VIEWER_TOKENS="carol:TOKEN"               read-only
    JOBTRAIL_OPERATOR_FILE=FILE                        lines of `NAME ROLE sha256:HEX`
    JOBTRAIL_AGENT_TOKENS="reports:TOKEN,etl:TOKEN"    agents (`/mcp`, as agent:NAME)
    JOBTRAIL_AGENT_FILE=FILE                           lines of `NAME sha256:HEX`

A token is only ever compared by its SHA-256 (in constant time) and never logged, stored or
put in a cookie. A login sets a session cookie: the operator's name, role, expiry, a random
session id and a short tag of the token's hash (a changed token ends old sessions), signed
with HMAC under a key held in memory (JOBTRAIL_SESSION_KEY to share it between processes).
The CSRF token of a form is an HMAC of the session id: a page of one session cannot be used
to post for another.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from jobtrail.core.canonical import sha256_text
from jobtrail.errors import InvalidInput

T = TypeVar("T")
COOKIE = "jobtrail_session"
MIN_TOKEN = 16
SESSION_FOR = timedelta(hours=8)


class Role(StrEnum):
    READ_ONLY = "read-only"
    OPERATOR = "operator"


@dataclass(frozen=True, kw_only=True)
class Operator:
    name: str
    role: Role
    token_hash: str  # sha256 hex of the token

    @property
    def actor(self) -> str:
        """The name the ledger records for this operator's actions (a person)."""
        return f"dashboard:{self.name}"


@dataclass(frozen=True, kw_only=True)
class Principal:
    operator: Operator
    session: str  # the session id (a cookie's), or "bearer:" and the token's hash


@dataclass(frozen=True, kw_only=True)
class Agent:
    """An agent that may call the MCP tools over HTTP with its own token."""

    name: str
    token_hash: str  # sha256 hex of the token

    @property
    def actor(self) -> str:
        """The name the ledger records for this agent's actions (always an agent)."""
        return f"agent:{self.name}"


token_hash = sha256_text  # what is kept of a token: its SHA-256, in hex


def match_token(holders: Iterable[tuple[str, T]], token: str) -> T | None:
    """The holder whose token hash (first of each pair) is the hash of `token`. Every one
    is compared, in constant time: how long this takes says nothing about the token."""
    presented, match = token_hash(token), None
    for digest, holder in holders:
        if hmac.compare_digest(digest, presented):
            match = holder
    return match


def operators_from_env(env: Mapping[str, str] | None = None) -> list[Operator]:
    env = os.environ if env is None else env
    found = [
        *_operators(
            env.get("JOBTRAIL_OPERATOR_TOKENS", ""), Role.OPERATOR, "JOBTRAIL_OPERATOR_TOKENS"
        ),
        *_operators(
            env.get("JOBTRAIL_VIEWER_TOKENS", ""), Role.READ_ONLY, "JOBTRAIL_VIEWER_TOKENS"
        ),
    ]
    if file := env.get("JOBTRAIL_OPERATOR_FILE"):
        found.extend(operators_from_file(Path(file)))
    names = [op.name for op in found]
    if len(set(names)) != len(names):
        raise InvalidInput("an operator name is given twice; each operator needs one token")
    return found


def agents_from_env(env: Mapping[str, str] | None = None) -> list[Agent]:
    """The agents of JOBTRAIL_AGENT_TOKENS and JOBTRAIL_AGENT_FILE."""
    env = os.environ if env is None else env
    found = [
        Agent(name=name, token_hash=digest)
        for name, digest in _pairs(env.get("JOBTRAIL_AGENT_TOKENS", ""), "JOBTRAIL_AGENT_TOKENS")
    ]
    if file := env.get("JOBTRAIL_AGENT_FILE"):
        found.extend(
            Agent(name=name, token_hash=digest)
            for name, _, digest in _hashed_lines(Path(file), roles=None, what="agent")
        )
    names = [agent.name for agent in found]
    if len(set(names)) != len(names):
        raise InvalidInput("an agent name is given twice; each agent needs one token")
    return found


def _pairs(text: str, variable: str) -> list[tuple[str, str]]:
    """(name, token hash) of each `NAME:TOKEN` in `text`."""
    found = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, colon, token = item.partition(":")
        if not colon or not _good_name(name) or len(token) < MIN_TOKEN:
            # never the item itself: it holds a token
            raise InvalidInput(
                f"{variable} must read NAME:TOKEN,NAME:TOKEN with names of letters, digits, "
                f"'.', '_' or '-' and tokens of at least {MIN_TOKEN} characters"
            )
        found.append((name, token_hash(token)))
    return found


def _operators(text: str, role: Role, variable: str) -> list[Operator]:
    return [Operator(name=n, role=role, token_hash=h) for n, h in _pairs(text, variable)]


def operators_from_file(file: Path) -> list[Operator]:
    """Lines `NAME ROLE sha256:HEX` (`#` starts a comment); ROLE is operator or read-only."""
    return [
        Operator(name=name, role=Role(role or ""), token_hash=digest)
        for name, role, digest in _hashed_lines(
            file, roles=frozenset(r.value for r in Role), what="operator"
        )
    ]


def _hashed_lines(
    file: Path, *, roles: frozenset[str] | None, what: str
) -> list[tuple[str, str | None, str]]:
    """(name, role, token hash) of each line `NAME ROLE sha256:HEX` (`NAME sha256:HEX` when
    there are no `roles`); `#` starts a comment."""
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read the {what} file {file}: {exc}") from None
    size = 2 if roles is None else 3
    found = []
    for number, line in enumerate(lines, 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        digest = words[-1].removeprefix("sha256:") if len(words) == size else ""
        role = None if roles is None or len(words) != size else words[1]
        if (
            len(words) != size
            or not _good_name(words[0])
            or (roles is not None and role not in roles)
            or len(digest) != 64
            or any(c not in "0123456789abcdef" for c in digest)
        ):
            shape = "NAME sha256:HEX" if roles is None else "NAME ROLE sha256:HEX"
            with_roles = "" if roles is None else f" with ROLE {' or '.join(sorted(roles))}"
            raise InvalidInput(
                f"{file}:{number}: expected `{shape}`{with_roles} (the hash: "
                "`printf %s TOKEN | sha256sum`)"
            )
        found.append((words[0], role, digest))
    return found


def _good_name(name: str) -> bool:
    return 0 < len(name) <= 64 and all(c.isalnum() or c in "._-" for c in name)


def same_site_path(target: str) -> str:
    """`target` if it is a path of this site, else "/": never an open redirect. Browsers
    drop tabs and newlines from a URL and read a backslash as a slash, so a slash, a tab
    and "/evil.example" lead to another host, as `//evil` and a slash and a backslash do;
    an absolute URL does outright."""
    if (
        not target.startswith("/")
        or any(ch == "\\" or not ch.isprintable() or ch.isspace() for ch in target)
        or target.startswith("//")
    ):
        return "/"
    parts = urlsplit(target)
    return target if not parts.scheme and not parts.netloc else "/"


class Access:
    def __init__(self, operators: list[Operator], key: bytes | None = None) -> None:
        self.operators = {op.name: op for op in operators}
        env_key = os.environ.get("JOBTRAIL_SESSION_KEY", "")
        self._key = key or (env_key.encode() if env_key else secrets.token_bytes(32))
        # Sessions ended by a sign-out, until their cookie would have expired anyway.
        self._ended: dict[str, int] = {}

    def by_token(self, token: str) -> Operator | None:
        return match_token(((op.token_hash, op) for op in self.operators.values()), token)

    def bearer(self, token: str) -> Principal | None:
        op = self.by_token(token)
        return None if op is None else Principal(operator=op, session=f"bearer:{op.token_hash}")

    def new_session(self, op: Operator, now: datetime) -> tuple[str, Principal]:
        """A signed cookie value for `op`, valid for SESSION_FOR, and its principal."""
        session = secrets.token_urlsafe(18)
        claims = {
            "n": op.name,
            "e": int((now + SESSION_FOR).timestamp()),
            "s": session,
            "t": op.token_hash[:16],
        }
        body = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
        return f"{body}.{self._sign('session|' + body)}", Principal(operator=op, session=session)

    def from_cookie(self, value: str, now: datetime) -> Principal | None:
        body, dot, signature = value.partition(".")
        if not dot or not hmac.compare_digest(signature, self._sign("session|" + body)):
            return None
        try:
            claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
            name, expires, session, tag = claims["n"], claims["e"], claims["s"], claims["t"]
        except (ValueError, KeyError, TypeError):
            return None
        op = self.operators.get(name) if isinstance(name, str) else None
        if op is None or op.token_hash[:16] != tag or not isinstance(expires, int):
            return None  # gone, or its token changed since the login
        if expires <= now.timestamp() or str(session) in self._ended:
            return None
        return Principal(operator=op, session=str(session))

    def end_session(self, value: str, now: datetime) -> None:
        """A sign-out: the session of cookie `value` opens nothing from now on (kept until
        the cookie would have expired, then forgotten)."""
        principal = self.from_cookie(value, now)
        if principal is None:
            return
        stamp = int(now.timestamp())
        self._ended = {s: e for s, e in self._ended.items() if e > stamp}
        self._ended[principal.session] = stamp + int(SESSION_FOR.total_seconds())

    def seal(self, principal: Principal, document: dict[str, Any]) -> str:
        """`document` as a URL-safe value only this server can have made, for this session:
        what an action did, carried to the page the browser is redirected to."""
        body = base64.urlsafe_b64encode(json.dumps(document).encode()).decode().rstrip("=")
        return f"{body}.{self._sign(f'notice|{principal.session}|{body}')}"

    def unseal(self, principal: Principal, value: str) -> dict[str, Any] | None:
        """What `seal` put in `value` for this session, or None (forged, another's, bad)."""
        body, dot, signature = value.partition(".")
        expected = self._sign(f"notice|{principal.session}|{body}")
        if not dot or not hmac.compare_digest(signature, expected):
            return None
        try:
            document = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        except ValueError:
            return None
        return document if isinstance(document, dict) else None

    def csrf(self, principal: Principal) -> str:
        return self._sign("csrf|" + principal.session)

    def csrf_ok(self, principal: Principal, given: str) -> bool:
        return bool(given) and hmac.compare_digest(given, self.csrf(principal))

    def _sign(self, text: str) -> str:
        return hmac.new(self._key, text.encode(), hashlib.sha256).hexdigest()
