"""The simulator's whole mutable state, owned by the one event loop that serves it.

Everything a handler needs is an O(1) dict lookup: the benchmark polls ten
thousand jobs at once, and a linear scan here would measure the simulator
instead of jobtrail.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
from collections.abc import Callable
from typing import Any

from aiohttp import web

from jobtrail.simulator.lifecycle import advance
from jobtrail.simulator.records import CallRecord, KeyEntry, SimJob, iso_utc
from jobtrail.simulator.webhooks import WebhookSender

CALL_KINDS = ("create", "status", "cancel", "result", "list")


class SimState:
    """Jobs, idempotency keys, registered faults, counters and the calls log."""

    def __init__(
        self,
        *,
        token: str | None,
        record_calls: bool,
        max_calls: int,
        clock: Callable[[], float],
    ) -> None:
        # only a digest of the expected header is kept, so no repr or dump can leak the token
        self._auth_digest = (
            None if token is None else hashlib.sha256(f"Bearer {token}".encode()).digest()
        )
        self.record_calls = record_calls
        self.max_calls = max_calls
        self.clock = clock
        self.webhooks: WebhookSender | None = None
        self.jobs: dict[str, SimJob] = {}
        self.by_reference: dict[str, list[str]] = {}
        self.keys: dict[str, KeyEntry] = {}
        self.create_throttled: dict[str, int] = {}
        self.reference_faults: dict[str, dict[str, Any]] = {}
        self.default_faults: dict[str, Any] = {}
        self.calls: list[CallRecord] = []
        self.calls_dropped = 0
        self.counts: dict[str, int] = dict.fromkeys(CALL_KINDS, 0)
        self.jobs_created = 0
        self.auth_failures = 0

    def reset(self) -> None:
        """Forget every job, key, fault and counter (the auth and webhook settings stay)."""
        for job in self.jobs.values():
            if job.timer is not None:
                job.timer.cancel()
        self.jobs.clear()
        self.by_reference.clear()
        self.keys.clear()
        self.create_throttled.clear()
        self.reference_faults.clear()
        self.default_faults.clear()
        self.calls.clear()
        self.calls_dropped = 0
        self.counts = dict.fromkeys(CALL_KINDS, 0)
        self.jobs_created = 0
        self.auth_failures = 0
        if self.webhooks is not None:
            self.webhooks.sent = 0
            self.webhooks.failures = 0

    # -- auth ---------------------------------------------------------------

    def check_auth(self, request: web.Request) -> tuple[bool, bool]:
        """(Authorization present, Authorization valid); valid is True when no token is set."""
        header = request.headers.get("Authorization")
        if self._auth_digest is None:
            return header is not None, True
        if header is None:
            self.auth_failures += 1
            return False, False
        valid = hmac.compare_digest(hashlib.sha256(header.encode()).digest(), self._auth_digest)
        if not valid:
            self.auth_failures += 1
        return True, valid

    # -- jobs ---------------------------------------------------------------

    def add_job(self, job: SimJob) -> None:
        self.jobs[job.job_id] = job
        if job.client_reference is not None:
            self.by_reference.setdefault(job.client_reference, []).append(job.job_id)
        self.jobs_created += 1

    def advance_job(self, job: SimJob, now: float, *, read: bool) -> None:
        """Advance a job and announce its state changes by webhook."""
        changes = advance(job, now, read=read)
        if changes and self.webhooks is not None:
            self.webhooks.emit(job, changes)

    def start_clock(self, job: SimJob) -> None:
        """Time-based jobs run without being polled, so webhook-only clients see them finish."""
        loop = asyncio.get_running_loop()
        loop.call_soon(self._tick, job.job_id)

    def _tick(self, job_id: str) -> None:
        job = self.jobs.get(job_id)
        if job is None or job.terminal:
            return
        self.advance_job(job, self.clock(), read=False)
        seconds = job.faults.duration_seconds
        if job.terminal or seconds is None or job.faults.never_finish:
            return
        remaining = job.created_ts + seconds - self.clock()
        # a small margin: the loop's monotonic timer and the wall clock drift apart slightly
        job.timer = asyncio.get_running_loop().call_later(
            max(remaining, 0.0) + 0.005, self._tick, job_id
        )

    # -- calls and stats ----------------------------------------------------

    def record(
        self,
        kind: str,
        request: web.Request,
        status: int | None,
        *,
        at: float,
        auth: tuple[bool, bool],
        job_id: str | None = None,
        idempotency_key: str | None = None,
        client_reference: str | None = None,
    ) -> None:
        if not self.record_calls:
            return
        headers = request.headers
        self.calls.append(
            CallRecord(
                kind=kind,
                job_id=job_id,
                method=request.method,
                path=request.path_qs,
                status=status,
                at=iso_utc(at),
                trace_id=headers.get("X-Trace-ID"),
                traceparent=headers.get("traceparent"),
                idempotency_key=idempotency_key or headers.get("Idempotency-Key"),
                client_reference=client_reference or headers.get("X-Client-Reference"),
                auth_present=auth[0],
                auth_valid=auth[1],
                cookie=headers.get("Cookie"),
            )
        )
        if len(self.calls) > self.max_calls:
            # drop the oldest tenth at once so trimming stays amortised O(1) per call
            cut = max(1, self.max_calls // 10)
            del self.calls[:cut]
            self.calls_dropped += cut

    def stats(self) -> dict[str, Any]:
        return {
            "jobs_created": self.jobs_created,
            "calls": dict(self.counts),
            "auth_failures": self.auth_failures,
            "webhooks_sent": 0 if self.webhooks is None else self.webhooks.sent,
            "webhook_failures": 0 if self.webhooks is None else self.webhooks.failures,
            "calls_dropped": self.calls_dropped,
        }

    def close_timers(self) -> None:
        for job in self.jobs.values():
            if job.timer is not None:
                job.timer.cancel()
                job.timer = None
