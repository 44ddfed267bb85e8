"""What a provider is to the rest of jobtrail: one call method returning typed outcomes.

The generic HTTP provider (http.py) is configured by a provider file; a code provider for a
non-REST API implements the same protocol. Calls never raise for anything the remote side
does: timeouts, resets, garbage and refusals all come back as outcomes. A provider that
raises anyway (a bug) has its error recorded on the attempt by the worker, and the call is
treated as one whose outcome is unknown (worker/runner.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from jobtrail.core import outcomes as o
from jobtrail.core.model import AttemptKind, Capabilities, Operation


@dataclass(frozen=True, kw_only=True)
class Fetched:
    """A result body as fetched, before validation."""

    content: bytes
    content_type: str | None
    checksum: str | None = None  # as the provider stated it (header or status field)
    record_count: int | None = None  # as the provider stated it
    http_status: int | None = None
    request_id: str | None = None
    # JSON Lines or not, when it differs from the provider file's `format`: a part of a
    # JSON status answer is JSON, a file that answer links to is in the declared format
    jsonl: bool | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Repeated:
    """A status answer whose identity (`Reply.answer`) equals the one the caller said it
    read last: nothing of it was decoded, redacted or judged."""

    request_id: str | None  # the answer's own request id (never part of its identity), raw
    # The answer decoded and judged after all, as it would have been (a caller that cannot
    # record it as seen again: a deadline reached meanwhile, the record moved on).
    in_full: Callable[[], Reply]


@dataclass(frozen=True, kw_only=True)
class Reply:
    """A call's outcome (or fetched result) and sanitized metadata for the record."""

    outcome: o.CallOutcome | None
    detail: dict[str, Any] = field(default_factory=dict)
    fetched: Fetched | None = None
    # A status answer's identity, from a provider that can tell it: its status code, the
    # headers the core acts on and its body, as bytes (worker/seen.py compares them).
    answer: bytes | None = None
    # Set (and `outcome` None) when the answer's identity was the one the caller passed as
    # `previous`: the worker records it as seen again without judging it (worker/seen.py).
    repeated: Repeated | None = None


class Provider(Protocol):
    name: str
    capabilities: Capabilities

    def describe(self, kind: AttemptKind, op: Operation) -> dict[str, Any]:
        """The call about to be made, sanitized, for the attempt's recorded intent."""
        ...

    async def call(self, kind: AttemptKind, op: Operation) -> Reply: ...


class Repeats(Protocol):
    """A provider that tells a status answer equal to the last one read (the HTTP
    provider): given that answer's identity as `previous`, an equal answer comes back as a
    `Reply` with `repeated` set and nothing decoded."""

    async def call(
        self, kind: AttemptKind, op: Operation, *, previous: bytes | None = None
    ) -> Reply: ...
