"""Records the simulator keeps: jobs, recorded calls, stored create answers.

Calls and stored answers are facts and therefore frozen. A job is the
provider's *live* state and changes on almost every status read; it is a
mutable slotted dataclass on purpose, because replacing a frozen record per
read would cost allocations on the benchmark's hot path for no safety gain
(only the simulator's own loop thread ever touches it).
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from jobtrail.simulator.faults import HOSTILE_TEXT, Faults, with_nul

TERMINAL_STATES = frozenset({"succeeded", "failed", "cancelled"})


def iso_utc(ts: float) -> str:
    """``2025-03-08T14:26:40.123456Z``: ISO-8601 UTC with a ``Z``, as the article shows."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(kw_only=True, slots=True, eq=False)
class SimJob:
    """One remote job as the provider sees it."""

    job_id: str
    client_reference: str | None
    idempotency_key: str | None
    faults: Faults
    body: dict[str, Any]
    created_ts: float
    state: str = "queued"
    version: int = 1
    updated_ts: float = 0.0
    # formatted once per change, not once per read: status reads are the hot path
    updated_at: str = ""
    completed: int = 0
    # status reads that reached the lifecycle (throttled / errored reads do not advance it)
    advances: int = 0
    status_reads: int = 0
    status_throttled: int = 0
    cancel_throttled: int = 0
    status_errors: int = 0
    cancel_requested: bool = False
    cancel_requests: int = 0
    result_reads: int = 0
    result_errors: int = 0
    error_code: str | None = None
    error_message: str | None = None
    # the result body is built once: benchmarks read thousands of results
    result_cache: tuple[bytes, str] | None = None
    timer: asyncio.TimerHandle | None = None
    # out_of_order webhooks hold the running event back until the terminal one is sent
    held_events: list[bytes] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.updated_at:
            self.updated_at = iso_utc(self.updated_ts)

    def touch(self, now: float) -> None:
        self.updated_ts = now
        self.updated_at = iso_utc(now)

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES

    @property
    def total(self) -> int:
        return self.faults.items

    def status_json(self) -> dict[str, Any]:
        """The public ``GET /v1/jobs/{id}`` body."""
        out: dict[str, Any] = {
            "job_id": self.job_id,
            "state": self.state,
            "updated_at": self.updated_at,
            "progress": {"completed": self.completed, "total": self.total},
            "client_reference": self.client_reference,
        }
        if self.state == "failed":
            out["error"] = {"code": self.error_code, "message": self.error_message}
        if self.faults.hostile_text:
            out["state"] = self.state + HOSTILE_TEXT
            out["progress"]["note"] = HOSTILE_TEXT
            if "error" in out:
                out["error"]["message"] = f"{self.error_message}{HOSTILE_TEXT}"
        if self.faults.nul_text:
            out["state"] = with_nul(self.state)
            out["progress"]["note"] = with_nul("progress")
            if "error" in out:
                out["error"]["message"] = with_nul(self.error_message or "error")
        return out

    def admin_json(self) -> dict[str, Any]:
        """Everything a test may want to assert on, for ``GET /_sim/jobs``."""
        return {
            **self.status_json(),
            "version": self.version,
            "created_at": iso_utc(self.created_ts),
            "idempotency_key": self.idempotency_key,
            "faults": self.faults.to_json(),
            "body": self.body,
            "poll_count": self.status_reads,
            "advances": self.advances,
            "cancel_requested": self.cancel_requested,
            "cancel_requests": self.cancel_requests,
            "result_reads": self.result_reads,
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class CallRecord:
    """One request the simulator received. The Authorization value is never kept."""

    kind: str
    job_id: str | None
    method: str
    path: str
    # None: the connection was closed without an answer (drop_create_answer)
    status: int | None
    at: str
    trace_id: str | None
    traceparent: str | None
    idempotency_key: str | None
    client_reference: str | None
    auth_present: bool
    auth_valid: bool
    # the Cookie header the client sent (hostile answers: cookies must not cross operations)
    cookie: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, kw_only=True, slots=True)
class CreateAnswer:
    """A create response as stored under an idempotency key, replayable byte for byte."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    # the 50 MB body is streamed from a pattern rather than stored
    huge: bool = False


@dataclass(kw_only=True, slots=True, eq=False)
class KeyEntry:
    """What the provider remembers about one idempotency key."""

    fingerprint: str
    job_id: str
    in_flight: bool = True
    answer: CreateAnswer | None = None
    drops_done: int = 0
