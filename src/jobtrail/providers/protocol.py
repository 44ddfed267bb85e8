"""What a provider is to the rest of jobtrail: one call method returning typed outcomes.

The generic HTTP provider (http.py) is configured by a provider file; a code provider for a
non-REST API implements the same protocol. Calls never raise for anything the remote side
does: timeouts, resets, garbage and refusals all come back as outcomes. A provider that
raises anyway (a bug) has its error recorded on the attempt by the worker, and the call is
treated as one whose outcome is unknown (worker/runner.py).
"""

from __future__ import annotations

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


@dataclass(frozen=True, kw_only=True)
class Reply:
    """A call's outcome (or fetched result) and sanitized metadata for the record."""

    outcome: o.CallOutcome | None
    detail: dict[str, Any] = field(default_factory=dict)
    fetched: Fetched | None = None


class Provider(Protocol):
    name: str
    capabilities: Capabilities

    def describe(self, kind: AttemptKind, op: Operation) -> dict[str, Any]:
        """The call about to be made, sanitized, for the attempt's recorded intent."""
        ...

    async def call(self, kind: AttemptKind, op: Operation) -> Reply: ...
