"""Keeping secrets out of everything we store or print.

Two nets: by name (headers and body fields known to carry credentials, plus those a provider
file names) and by value (the exact secret strings a provider used on this call, so that an
echo of a token in an error body is caught too).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

REDACTED = "[redacted]"

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
    }
)
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
    }
)


@dataclass(frozen=True)
class Redactor:
    headers: frozenset[str] = SENSITIVE_HEADERS
    fields: frozenset[str] = SENSITIVE_FIELDS
    values: tuple[str, ...] = field(default=())

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
            tuple(dict.fromkeys((*self.values, *(v for v in values if v and len(v) >= 4)))),
        )

    def is_sensitive_header(self, name: str) -> bool:
        return name.lower() in self.headers

    def header_map(self, headers: Mapping[str, str]) -> dict[str, str]:
        return {
            name: REDACTED if self.is_sensitive_header(name) else self.text(value)
            for name, value in headers.items()
        }

    def text(self, value: str) -> str:
        for secret in self.values:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value

    def json(self, value: Any) -> Any:
        """A copy of a JSON value with sensitive fields and secret values replaced."""
        if isinstance(value, dict):
            return {
                key: REDACTED if str(key).lower() in self.fields else self.json(item)
                for key, item in value.items()
            }
        if isinstance(value, list | tuple):
            return [self.json(item) for item in value]
        if isinstance(value, str):
            return self.text(value)
        return value


DEFAULT_REDACTOR = Redactor()
