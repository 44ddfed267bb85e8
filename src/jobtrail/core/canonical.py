"""Canonical JSON (RFC 8785 style) and request fingerprints.

Sorted keys (by UTF-16 code units, as RFC 8785 says), no insignificant whitespace, UTF-8
text kept as is, integers exact, floats in their shortest round-trip form with integral
values written as integers (1.0 and 1 are the same number in JSON). NaN and infinities are
not JSON and are refused.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from jobtrail.errors import InvalidInput


def _number(value: float) -> str:
    if not math.isfinite(value):
        raise InvalidInput("NaN and infinite numbers are not valid JSON; send them as strings")
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        sign = "-" if exponent.startswith("-") else "+"
        text = f"{mantissa}e{sign}{exponent.lstrip('+-').lstrip('0') or '0'}"
    return text


# One encoder for every string: json.dumps(text, ensure_ascii=False) builds a new encoder on
# each call, and a canonical document is mostly small strings (same output either way).
_string = json.JSONEncoder(ensure_ascii=False).encode


# C901: one branch per JSON type: RFC 8785's encoding, kept in one place
def _encode(value: Any, out: list[str]) -> None:  # noqa: C901
    if isinstance(value, str):
        out.append(_string(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        out.append(_number(value))
    elif isinstance(value, list | tuple):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _encode(item, out)
        out.append("]")
    elif isinstance(value, dict):
        out.append("{")
        for i, key in enumerate(_sorted_keys(value)):
            if not isinstance(key, str):
                raise InvalidInput(f"JSON object keys must be strings, got {key!r}")
            if i:
                out.append(",")
            out.append(_string(key))
            out.append(":")
            _encode(value[key], out)
        out.append("}")
    else:
        raise InvalidInput(f"{type(value).__name__} is not a JSON value")


def _sorted_keys(value: dict[Any, Any]) -> list[Any]:
    """Keys in UTF-16 code unit order. For ASCII keys (the usual case) that is plain string
    order, which needs no re-encoding of every key to compare."""
    if all(isinstance(key, str) and key.isascii() for key in value):
        return sorted(value)
    return sorted(value, key=_utf16_key)


def _utf16_key(key: object) -> bytes:
    return str(key).encode("utf-16-be")


def canonical_json(value: Any) -> str:
    """The one textual form of a JSON value."""
    out: list[str] = []
    _encode(value, out)
    return "".join(out)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def fingerprint(
    method: str,
    target: str,
    body: Any,
    headers: dict[str, str] | None = None,
    path: dict[str, str] | None = None,
) -> str:
    """`sha256:` over the canonical form of what the request would do. Extra request
    headers and the create path's submitted values change what is asked, so they count too
    (header names case-insensitively)."""
    document: dict[str, Any] = {"method": method.upper(), "target": target, "body": body}
    if headers:
        document["headers"] = {name.lower(): value for name, value in headers.items()}
    if path:
        document["path"] = dict(path)
    return "sha256:" + sha256_text(canonical_json(document))
