"""Keeping secrets out of everything we store or print.

Two nets: by name (headers and body fields known to carry credentials, plus those a provider
file names) and by value (the secret strings a provider uses, so that an echo of a token in an
error body is caught too). By value means the whole secret, and also what a truncation
elsewhere may have left of one: a run of FRAGMENT or more of its characters anywhere, a
beginning of it of PREFIX characters or more anywhere, and a beginning of it (4 characters
or more) that ends the text.

A header is sensitive by name when it is one of SENSITIVE_HEADERS, when its name holds a
credential word (CREDENTIAL_WORDS: `X-Auth`, `X-JWT`, `X-Passphrase`...) or is made of parts
one of which is a short credential word (CREDENTIAL_PARTS: `X-Sig`, `X-OTP`, `X-Private`),
unless it is one of the few public headers that happen to (PUBLIC_HEADERS, rate-limit counts
of tokens). A value is a credential by its shape when it is a bearer credential or a JSON
Web Token as a whole (`looks_like_credential`): submit refuses those wherever they are.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

REDACTED = "[redacted]"
_ENCODE = json.JSONEncoder(ensure_ascii=False, allow_nan=True).encode
FRAGMENT = 16  # a run of this many characters of a secret is treated as the secret
_PROBE = FRAGMENT // 2  # probes this long, every _PROBE characters, find every FRAGMENT run
_MIN_SECRET = 4
PREFIX = 12  # a beginning of a secret this long is treated as the secret, wherever it is

SENSITIVE_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "set-cookie",
        "x-api-key",
        "api-key",
        "x-auth-token",
        "x-amz-security-token",
        "webhook-signature",
        "x-webhook-signature",
        "x-auth",
        "x-jwt",
        "x-bearer",
        "x-pwd",
        "x-passphrase",
    }
)
# A header whose name holds one of these is taken to carry a credential...
CREDENTIAL_WORDS = (
    "auth",
    "token",
    "secret",
    "key",
    "jwt",
    "bearer",
    "pwd",
    "pass",
    "credential",
    "session",
    "cookie",
    "signature",
    "hmac",
)
# ...or whose name has one of these as a part (`X-Sig`, `X-OTP`): too short to look for
# inside a word (`otp` is in `footprint`)
CREDENTIAL_PARTS = frozenset({"sig", "otp", "totp", "hotp", "mfa", "private", "privatekey"})
_PARTS = re.compile(r"[-_.]+")
# A whole value shaped like a credential: `Bearer` and a token, or a JSON Web Token.
_CREDENTIAL_VALUE = re.compile(
    r"(?i:bearer)\s+[A-Za-z0-9._~+/=-]{16,}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"
)
# ...except these, which are public by definition: jobtrail's own idempotency key, and
# the rate-limit counts providers send (`x-ratelimit-remaining-tokens`).
PUBLIC_HEADERS = frozenset({"idempotency-key", "x-idempotency-key"})
_PUBLIC_PARTS = ("ratelimit", "rate-limit")
SENSITIVE_FIELDS = frozenset(
    {
        "password",
        "passwd",
        "secret",
        "client_secret",
        "api_key",
        "apikey",
        "access_token",
        "refresh_token",
        "token",
        "private_key",
        "authorization",
        "accesstoken",
        "refreshtoken",
        "id_token",
        "idtoken",
        "jwt",
        "pwd",
        "passphrase",
        "credentials",
        "credential",
        "clientsecret",
        "privatekey",
        "secret_key",
        "secretkey",
        "session_token",
        "sessiontoken",
        "bearer",
        "bearer_token",
        "bearertoken",
        "auth_token",
        "authtoken",
        "otp",
        "totp",
        "hmac",
    }
)


@dataclass(frozen=True)
class Redactor:
    headers: frozenset[str] = SENSITIVE_HEADERS
    fields: frozenset[str] = SENSITIVE_FIELDS
    values: tuple[str, ...] = field(default=())
    # Derived from `values`: aligned probes (cheap to look for) and every window of the
    # probe's length (to find where a fragment starts and ends once a probe matched).
    _probes: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _windows: frozenset[str] = field(init=False, repr=False, compare=False)
    # Any text the rules touch holds a probe or the first _MIN_SECRET characters of a secret:
    # one search for them all lets the common case (no secret in sight) cost one C call.
    _suspect: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    _suspects: tuple[str, ...] = field(init=False, repr=False, compare=False)
    # A sensitive field's key in JSON text whose value is not already `REDACTED`.
    _open_field: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    _json_text_shows_secrets: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        long = [v for v in self.values if len(v) >= FRAGMENT]
        probes = {v[i : i + _PROBE] for v in long for i in range(0, len(v) - _PROBE + 1, _PROBE)}
        windows = {v[i : i + _PROBE] for v in long for i in range(len(v) - _PROBE + 1)}
        starts = {v[:_MIN_SECRET] for v in self.values}
        suspect = "|".join(re.escape(s) for s in sorted(probes | starts, key=len, reverse=True))
        object.__setattr__(self, "_probes", tuple(sorted(probes)))
        object.__setattr__(self, "_windows", frozenset(windows))
        object.__setattr__(self, "_suspect", re.compile(suspect) if suspect else None)
        object.__setattr__(self, "_suspects", tuple(sorted(probes | starts)))
        # JSON text shows a secret or a field name as it is unless encoding escapes one of its
        # characters; with the encoder's separators, a key is always followed by '": '.
        plain = all(_shown_as_is(v) for v in (*self.values, *self.fields))
        object.__setattr__(self, "_json_text_shows_secrets", plain)
        keys = "|".join(re.escape(f) for f in sorted(self.fields, key=len, reverse=True))
        open_field = f'"(?:{keys})": (?!"{re.escape(REDACTED)}"[,}}])' if keys else None
        object.__setattr__(self, "_open_field", re.compile(open_field) if open_field else None)

    def extended(
        self,
        *,
        headers: Iterable[str] = (),
        fields: Iterable[str] = (),
        values: Iterable[str] = (),
    ) -> Redactor:
        return Redactor(
            self.headers | {h.lower() for h in headers},
            self.fields | {f.lower() for f in fields},
            tuple(
                dict.fromkeys((*self.values, *(v for v in values if v and len(v) >= _MIN_SECRET)))
            ),
        )

    def is_sensitive_header(self, name: str) -> bool:
        lower = name.lower()
        if lower in self.headers:
            return True
        if lower in PUBLIC_HEADERS or any(part in lower for part in _PUBLIC_PARTS):
            return False
        return credential_named(lower)

    def header_map(self, headers: Mapping[str, str]) -> dict[str, str]:
        return {
            name: REDACTED if self.is_sensitive_header(name) else self.text(value)
            for name, value in headers.items()
        }

    def text(self, value: str) -> str:
        if self._suspect is None or len(value) < _MIN_SECRET or not self._suspect.search(value):
            return value
        return self._truncated_tail(self._within(value))

    def holds_secret(self, value: str) -> bool:
        """Whether `value` holds a secret in use by the rules of `text` (the whole secret, a
        run of FRAGMENT of its characters, a beginning of PREFIX or more), a truncated tail
        aside: what submit refuses, since a submitted request is stored as it is."""
        if self._suspect is None or len(value) < _MIN_SECRET or not self._suspect.search(value):
            return False
        return self._within(value) != value

    def _within(self, value: str) -> str:
        for secret in self.values:
            if secret in value:
                value = value.replace(secret, REDACTED)
        if any(probe in value for probe in self._probes):
            value = self._fragments(value)
        return self._prefixes(value)

    def _prefixes(self, value: str) -> str:
        """Replace every beginning of a secret PREFIX characters or longer, wherever it is
        (a secret cut short elsewhere, then followed by more text)."""
        for secret in self.values:
            if len(secret) < PREFIX:
                continue  # a shorter secret is only ever replaced whole
            start = value.find(secret[:PREFIX])
            while start >= 0:
                end = start + PREFIX
                while (
                    end < len(value)
                    and end - start < len(secret)
                    and (value[end] == secret[end - start])
                ):
                    end += 1
                value = value[:start] + REDACTED + value[end:]
                start = value.find(secret[:PREFIX], start + len(REDACTED))
        return value

    def _fragments(self, value: str) -> str:
        """Replace every run of characters made of overlapping windows of a secret."""
        spans: list[tuple[int, int]] = []
        for i in range(len(value) - _PROBE + 1):
            if value[i : i + _PROBE] in self._windows:
                if spans and i <= spans[-1][1]:
                    spans[-1] = (spans[-1][0], i + _PROBE)
                else:
                    spans.append((i, i + _PROBE))
        for start, end in reversed(spans):
            if end - start >= FRAGMENT:
                value = value[:start] + REDACTED + value[end:]
        return value

    def _truncated_tail(self, value: str) -> str:
        """A text cut short elsewhere (`reason[:200]`) may end in the beginning of a secret."""
        for secret in self.values:
            tail = value[-(len(secret) - 1) :]
            at = tail.find(secret[:_MIN_SECRET])
            while at >= 0:
                if secret.startswith(tail[at:]):
                    return value[: len(value) - len(tail) + at] + REDACTED
                at = tail.find(secret[:_MIN_SECRET], at + 1)
        return value

    def content(self, data: bytes) -> tuple[bytes, int]:
        """`data` with every secret replaced, and how many were: for stored result files."""
        found = 0
        for secret in self.values:
            raw = secret.encode("utf-8")
            count = data.count(raw)
            if count:
                found += count
                data = data.replace(raw, REDACTED.encode())
        return data, found

    def json(self, value: Any) -> Any:
        """A JSON value with sensitive fields and secret values replaced: a copy, or the value
        itself when it holds neither (one encoding and two searches tell, in C)."""
        if not value or value is True:
            return value  # None, False, 0, "", {}, []: nothing to hide
        if isinstance(value, int | float):
            return value
        if isinstance(value, dict | list | tuple) and self.leaves_unchanged(value):
            return value
        return self._json(value)

    def leaves_unchanged(self, value: Any) -> bool:
        """True when `json(value)` is sure to equal `value`: its JSON text holds nothing a rule
        could touch (no beginning or probe of a secret, no sensitive key whose value is not
        already redacted). False means "walk it", never "it is dirty". One encoding and two
        searches, in C, so a caller can ask this of a whole record at once."""
        if not self._json_text_shows_secrets:
            return False
        try:
            text = _ENCODE(value)
        except (TypeError, ValueError):
            return False
        for suspect in self._suspects:
            if suspect in text:
                return False
        return self._open_field is None or not self._open_field.search(text.lower())

    def _json(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {
                self.text(key) if isinstance(key, str) else key: REDACTED
                if str(key).lower() in self.fields
                else self._json(item)
                for key, item in value.items()
            }
        if isinstance(value, list | tuple):
            return [self._json(item) for item in value]
        if isinstance(value, str):
            return self.text(value)
        return value


def credential_named(name: str) -> bool:
    """Whether a header or field name says it carries a credential: a credential word in
    it, or a short one as one of its parts (public exceptions aside: `is_sensitive_header`)."""
    lower = name.lower()
    if any(word in lower for word in CREDENTIAL_WORDS):
        return True
    return any(part in CREDENTIAL_PARTS for part in _PARTS.split(lower))


def looks_like_credential(value: str) -> bool:
    """Whether `value`, as a whole, is shaped like a credential: `Bearer` and a token, or
    a JSON Web Token."""
    return _CREDENTIAL_VALUE.fullmatch(value.strip()) is not None


def _shown_as_is(text: str) -> bool:
    return '"' not in text and "\\" not in text and text.isprintable()


DEFAULT_REDACTOR = Redactor()
