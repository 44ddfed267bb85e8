"""Who may use the dashboard: operators, their roles, sessions and CSRF tokens.

Operators come from the environment, like every other credential:

    JOBTRAIL_OPERATOR_TOKENS="alice:TOKEN,bob:TOKEN"   operators (may act)
    JOBTRAIL_VIEWER_TOKENS="carol:TOKEN"               read-only
    JOBTRAIL_OPERATOR_FILE=FILE                        lines of `NAME ROLE sha256:HEX`

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
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from pathlib import Path

from jobtrail.errors import InvalidInput

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


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def operators_from_env(env: Mapping[str, str] | None = None) -> list[Operator]:
    env = os.environ if env is None else env
    found = [
        *_pairs(env.get("JOBTRAIL_OPERATOR_TOKENS", ""), Role.OPERATOR, "JOBTRAIL_OPERATOR_TOKENS"),
        *_pairs(env.get("JOBTRAIL_VIEWER_TOKENS", ""), Role.READ_ONLY, "JOBTRAIL_VIEWER_TOKENS"),
    ]
    if file := env.get("JOBTRAIL_OPERATOR_FILE"):
        found.extend(operators_from_file(Path(file)))
    names = [op.name for op in found]
    if len(set(names)) != len(names):
        raise InvalidInput("an operator name is given twice; each operator needs one token")
    return found


def _pairs(text: str, role: Role, variable: str) -> list[Operator]:
    found = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, colon, token = item.partition(":")
        if not colon or not _good_name(name) or len(token) < MIN_TOKEN:
            # never the item itself: it holds a token
            raise InvalidInput(
                f"{variable} must read NAME:TOKEN,NAME:TOKEN with names of letters, digits, "
                f"'.', '_' or '-' and tokens of at least {MIN_TOKEN} characters"
            )
        found.append(Operator(name=name, role=role, token_hash=token_hash(token)))
    return found


def operators_from_file(file: Path) -> list[Operator]:
    """Lines `NAME ROLE sha256:HEX` (`#` starts a comment); ROLE is operator or read-only."""
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read the operator file {file}: {exc}") from None
    found = []
    for number, line in enumerate(lines, 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        digest = words[2].removeprefix("sha256:") if len(words) == 3 else ""
        if (
            len(words) != 3
            or not _good_name(words[0])
            or words[1] not in {r.value for r in Role}
            or len(digest) != 64
            or any(c not in "0123456789abcdef" for c in digest)
        ):
            raise InvalidInput(
                f"{file}:{number}: expected `NAME ROLE sha256:HEX` with ROLE operator or "
                "read-only (the hash: `printf %s TOKEN | sha256sum`)"
            )
        found.append(Operator(name=words[0], role=Role(words[1]), token_hash=digest))
    return found


def _good_name(name: str) -> bool:
    return 0 < len(name) <= 64 and all(c.isalnum() or c in "._-" for c in name)


class Access:
    def __init__(self, operators: list[Operator], key: bytes | None = None) -> None:
        self.operators = {op.name: op for op in operators}
        env_key = os.environ.get("JOBTRAIL_SESSION_KEY", "")
        self._key = key or (env_key.encode() if env_key else secrets.token_bytes(32))

    def by_token(self, token: str) -> Operator | None:
        presented = token_hash(token)
        match = None
        for op in self.operators.values():  # every one compared: no early exit to time
            if hmac.compare_digest(op.token_hash, presented):
                match = op
        return match

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
        if expires <= now.timestamp():
            return None
        return Principal(operator=op, session=str(session))

    def csrf(self, principal: Principal) -> str:
        return self._sign("csrf|" + principal.session)

    def csrf_ok(self, principal: Principal, given: str) -> bool:
        return bool(given) and hmac.compare_digest(given, self.csrf(principal))

    def _sign(self, text: str) -> str:
        return hmac.new(self._key, text.encode(), hashlib.sha256).hexdigest()
