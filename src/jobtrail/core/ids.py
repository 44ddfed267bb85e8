"""Identifiers. Randomness is injected so tests are deterministic; production passes
`secrets.SystemRandom()`."""

from __future__ import annotations

import random
import re
from datetime import datetime
from typing import Any

# The shape of an idempotency token: `idem_` + 32 base32 characters (any case, any digit)
TOKEN_SHAPE = re.compile(r"idem_[A-Za-z0-9]{32}")


def operation_id(now: datetime, rand: random.Random) -> str:
    """`op_` + ULID: sortable by creation time, 80 random bits."""
    from ulid import ULID  # imported here: the package loads importlib.metadata (50 ms)

    millis = int(now.timestamp() * 1000)
    return "op_" + str(ULID.from_bytes(millis.to_bytes(6, "big") + rand.randbytes(10)))


def idempotency_token(rand: random.Random) -> str:
    """`idem_` + 160 random bits (32 base32 characters)."""
    return "idem_" + _base32(rand.getrandbits(160), 32)


def is_token(value: Any) -> bool:
    """Whether `value` has the shape of an idempotency token jobtrail makes."""
    return isinstance(value, str) and TOKEN_SHAPE.fullmatch(value) is not None


def trace_id(rand: random.Random) -> str:
    """A W3C trace id: 32 lowercase hex digits, never all zeros."""
    while True:
        value = rand.getrandbits(128)
        if value:
            return f"{value:032x}"


def span_id(rand: random.Random) -> str:
    while True:
        value = rand.getrandbits(64)
        if value:
            return f"{value:016x}"


def short_id(prefix: str, rand: random.Random) -> str:
    """Ids for attempts, requests and events: prefix + 96 random bits."""
    return prefix + _base32(rand.getrandbits(96), 20)


_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"


def _base32(value: int, length: int) -> str:
    chars = []
    for _ in range(length):
        value, digit = divmod(value, 32)
        chars.append(_ALPHABET[digit])
    return "".join(reversed(chars))
