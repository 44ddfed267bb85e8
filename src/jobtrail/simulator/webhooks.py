"""Signed webhook events of the simulator, and their fire-and-forget delivery.

Delivery never blocks a status answer and never raises into the server: a
provider's webhook is a best-effort hint, and the simulator counts failures
so tests can assert on them.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import secrets
import time
from datetime import UTC, datetime

import aiohttp
from standardwebhooks import Webhook

from jobtrail.simulator.answers import compact_json
from jobtrail.simulator.lifecycle import JobChange
from jobtrail.simulator.records import TERMINAL_STATES, SimJob, iso_utc

SIGNING_MODES = ("standard", "hmac")


def new_webhook_secret() -> str:
    """A fresh secret in the ``whsec_<base64>`` form Standard Webhooks expects."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()


class WebhookSigner:
    """Signs event bodies the Standard Webhooks way, or with a plain ``sha256=`` HMAC."""

    def __init__(self, secret: str, signing: str = "standard") -> None:
        if signing not in SIGNING_MODES:
            raise ValueError(f"webhook_signing must be one of {SIGNING_MODES}, got {signing!r}")
        if not secret:
            raise ValueError("webhook_secret may not be empty")
        self.signing = signing
        self._raw = secret.encode()
        # Webhook() rejects a secret that is not valid base64 now, not at the first event
        self._standard = Webhook(secret) if signing == "standard" else None

    def headers(self, event_id: str, body: bytes, ts: int | None = None) -> dict[str, str]:
        """Signature headers for ``body``; ``ts`` is the Unix time to sign (now by default)."""
        stamp = int(time.time()) if ts is None else ts
        if self._standard is not None:
            signature = self._standard.sign(
                msg_id=event_id, timestamp=datetime.fromtimestamp(stamp, UTC), data=body.decode()
            )
            return {
                "webhook-id": event_id,
                "webhook-timestamp": str(stamp),
                "webhook-signature": signature,
                "Content-Type": "application/json",
            }
        digest = hmac.new(self._raw, f"{stamp}.".encode() + body, hashlib.sha256).hexdigest()
        return {
            "X-Webhook-Id": event_id,
            "X-Webhook-Timestamp": str(stamp),
            "X-Webhook-Signature": f"sha256={digest}",
            "Content-Type": "application/json",
        }


def build_event(job: SimJob, change: JobChange | None = None, state: str | None = None) -> bytes:
    """A ``job.updated`` event body for ``change`` (or the job's current state), with a new id."""
    if change is None:
        change = JobChange(state=state or job.state, version=job.version, updated_ts=job.updated_ts)
    event = {
        "type": "job.updated",
        "id": "evt_" + secrets.token_hex(12),
        "data": {
            "job_id": job.job_id,
            "state": change.state,
            "client_reference": job.client_reference,
            "updated_at": iso_utc(change.updated_ts),
            "version": change.version,
        },
    }
    return compact_json(event)


def event_id_of(body: bytes) -> str:
    return str(json.loads(body)["id"])


class WebhookSender:
    """Posts events to one URL from background tasks and counts the outcome."""

    def __init__(self, url: str, signer: WebhookSigner, *, timeout: float = 5.0) -> None:
        self.url = url
        self.signer = signer
        self.sent = 0
        self.failures = 0
        self._timeout = timeout
        self._session: aiohttp.ClientSession | None = None
        # strong references: a bare create_task() result may be garbage-collected mid-flight
        self._tasks: set[asyncio.Task[None]] = set()
        self._queues: dict[str, list[bytes]] = {}

    async def start(self) -> None:
        self._session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=self._timeout),
            connector=aiohttp.TCPConnector(limit=64),
        )

    def emit(self, job: SimJob, changes: list[JobChange]) -> None:
        """Schedule delivery of ``changes`` following the job's ``webhooks`` fault."""
        mode = job.faults.webhooks
        if mode == "none" or not changes or self._session is None:
            return
        bodies = [(c.state, build_event(job, c)) for c in changes]
        if mode == "out_of_order":
            final = [b for s, b in bodies if s in TERMINAL_STATES]
            early = [b for s, b in bodies if s not in TERMINAL_STATES]
            if not final:
                job.held_events.extend(early)
                return
            held = list(job.held_events)
            job.held_events.clear()
            batch = final + held + early
        elif mode == "duplicate":
            batch = [b for _, b in bodies for _ in range(3)]
        else:
            batch = [b for _, b in bodies]
        self._enqueue(job.job_id, batch)

    def _enqueue(self, job_id: str, batch: list[bytes]) -> None:
        # one delivery task per job at a time: a job's events arrive in the order produced,
        # so "out_of_order" is the fault under test and never an accident of scheduling
        queue = self._queues.get(job_id)
        if queue is not None:
            queue.extend(batch)
            return
        self._queues[job_id] = list(batch)
        task = asyncio.get_running_loop().create_task(self._deliver(job_id))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _deliver(self, job_id: str) -> None:
        queue = self._queues[job_id]
        try:
            while queue:
                await self._post(queue.pop(0))
        finally:
            del self._queues[job_id]

    async def _post(self, body: bytes) -> None:
        assert self._session is not None
        headers = self.signer.headers(event_id_of(body), body)
        try:
            async with self._session.post(self.url, data=body, headers=headers) as resp:
                await resp.read()
                ok = 200 <= resp.status < 300
        except (aiohttp.ClientError, TimeoutError, OSError):
            ok = False
        if ok:
            self.sent += 1
        else:
            self.failures += 1

    async def drain(self) -> None:
        """Wait for deliveries in flight (tests use it before asserting on a receiver)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)
        if self._session is not None:
            await self._session.close()
            self._session = None
