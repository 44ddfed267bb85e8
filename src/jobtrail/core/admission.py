"""What a submitted request may not carry, checked before anything is stored.

The request is stored as it will be sent (a restart resends it byte for byte), so it must
never hold a credential: those come from the provider file's `auth`, read from the
environment at call time. What counts as one is core/redact.py's, the chokepoint's own
vocabulary: a credential name (header or field), a secret in use by the redactor's rules
(whole, a long run or a long beginning of it), or a value shaped like a credential.
Headers that belong to the connection, not to the request, and control characters that
would split a header are refused too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from jobtrail.core.lookup import MISSING, find
from jobtrail.core.redact import Redactor, credential_named, looks_like_credential
from jobtrail.errors import InvalidInput

# Headers of the connection (RFC 9110 section 7.6.1), and those the HTTP client must compute.
CONNECTION_HEADERS = frozenset(
    {
        "host",
        "connection",
        "keep-alive",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
    }
)
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 9110 field-name
_USE_AUTH = (
    "jobtrail never stores credentials: name the environment variable holding it in the "
    "provider file's `auth` instead"
)


def check_request(
    headers: Mapping[str, str], body: Any, redactor: Redactor, own: Iterable[str] = ()
) -> None:
    """Raise InvalidInput, in one line, for the first thing in the request that may not be
    stored. `redactor` knows the provider's sensitive names and the secret values it uses;
    `own` names the headers jobtrail sets itself (idempotency, client reference, trace)."""
    try:
        _check(headers, body, redactor, {name.lower() for name in own})
    except InvalidInput as exc:  # a refusal names what it refuses, never a secret in it
        raise InvalidInput(redactor.text(str(exc))) from None


def check_own_fields(body: Any, places: Mapping[str, str]) -> None:
    """Raise InvalidInput, in one line naming it, for a body field jobtrail writes itself
    (`places`: each dotted path and what goes there) that the request already holds: the
    stored request would keep the caller's value while the wire carries jobtrail's."""
    for path, what in places.items():
        if find(body, path, MISSING) is not MISSING:
            raise InvalidInput(
                f"the request body's {path} is where jobtrail writes {what} on every create "
                "attempt, so a value given there would be recorded but never sent: leave it out"
            )


def _check(headers: Mapping[str, str], body: Any, redactor: Redactor, ours: set[str]) -> None:
    for name, value in headers.items():
        _check_header(name, value, redactor, ours)
    for path, key, value in _walk(body, "body"):
        if key is not None and _holds_secret(key, redactor):
            raise InvalidInput(f"a request field name ({path}) holds a secret in use: {_USE_AUTH}")
        if key is not None and key.lower() in redactor.fields:
            raise InvalidInput(
                f"the request field {path} is a sensitive field (the provider file's [redact] "
                f"fields and credential names), and the stored request must be resendable "
                f"after a restart: {_USE_AUTH}"
            )
        if isinstance(value, str) and _holds_secret(value, redactor):
            raise InvalidInput(f"the request field {path} holds a secret in use: {_USE_AUTH}")
        if isinstance(value, str) and looks_like_credential(value):
            raise InvalidInput(
                f"the request field {path} holds a credential (a bearer token or a JWT): "
                f"{_USE_AUTH}"
            )


def _check_header(name: str, value: str, redactor: Redactor, ours: set[str]) -> None:
    lower = name.lower()
    if not _TOKEN.fullmatch(name):
        raise InvalidInput(
            f"header name {name!r} is not a valid HTTP field name (letters, digits and "
            "!#$%&'*+-.^_`|~ only; no spaces or control characters)"
        )
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise InvalidInput(
            f"header {name!r} has a control character (CR, LF, tab...) in its value; "
            "write the value on one line"
        )
    if lower in ours:
        raise InvalidInput(f"header {name!r} is set by jobtrail itself; leave it out")
    # credential_named too: the public exceptions of recorded answers (a rate limit's token
    # counts, an idempotency key) are not for a request to set
    if redactor.is_sensitive_header(name) or credential_named(lower):
        raise InvalidInput(f"header {name!r} carries a credential, and {_USE_AUTH}")
    if lower in CONNECTION_HEADERS or lower.startswith("proxy-"):
        raise InvalidInput(
            f"header {name!r} belongs to the connection, not to the request; the HTTP client "
            "sets it: leave it out"
        )
    if _holds_secret(value, redactor):
        raise InvalidInput(f"the value of header {name!r} is a secret in use: {_USE_AUTH}")
    if looks_like_credential(value):
        raise InvalidInput(
            f"the value of header {name!r} is a credential (a bearer token or a JWT): {_USE_AUTH}"
        )


def _holds_secret(text: str, redactor: Redactor) -> bool:
    return redactor.holds_secret(text)


def _walk(node: Any, path: str) -> Iterator[tuple[str, str | None, Any]]:
    """(path, the key naming it or None, value) of a JSON value and of all it contains."""
    yield path, None, node
    yield from _members(node, path)


def _members(node: Any, path: str) -> Iterator[tuple[str, str | None, Any]]:
    if isinstance(node, Mapping):
        for key, item in node.items():
            inner = f"{path}.{key}"
            yield inner, str(key), item
            yield from _members(item, inner)
    elif isinstance(node, list | tuple):
        for index, item in enumerate(node):
            inner = f"{path}[{index}]"
            yield inner, None, item
            yield from _members(item, inner)
