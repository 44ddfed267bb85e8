"""The notifier: delivers the outbox's notices (core/notices.py) to the endpoints an operator
configured, signed as Standard Webhooks (the `standardwebhooks` package, already a
dependency of the webhook receiver).

It runs beside the worker in `serve` and `worker` (and once in `jobtrail notify test`). A
round claims a due notice for a while (`hold`), posts it to every endpoint that has not
taken it yet, records each attempt, and either marks it delivered or schedules the next
round: the endpoint's Retry-After when it gave one, else capped, jittered backoff
(core/schedule.py `next_call_at` with `DELIVERY_BACKOFF`). Every round carries the event's
one id. Rounds run concurrently and apart from the worker, so an endpoint that fails or
never answers delays only its own notices. An endpoint's URL is never recorded (a Slack
webhook's path is its secret): attempts name it by a label.

An endpoint is a URL; `slack+https://...` posts the Slack-compatible text form instead
(`{"text": ...}`) to `https://...`. Which endpoints, secret, link and timeout: `--notify`,
the policy file's `[notify]` table, the environment (services/notify_setup.py).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import aiohttp
from standardwebhooks import Webhook

from jobtrail.clock import Clock, SystemClock
from jobtrail.core.notices import (
    DELIVERY_BACKOFF,
    DeliveryAttempt,
    Notice,
    Outboxed,
    after_round,
    slack_text,
)
from jobtrail.core.notify_file import endpoint_url
from jobtrail.core.schedule import Bounds, next_call_at
from jobtrail.errors import InvalidInput, JobtrailError
from jobtrail.providers.transport import single_shot

if TYPE_CHECKING:
    from jobtrail.ledger import Ledger

log = logging.getLogger("jobtrail.notify")
SECRET_ENV = "JOBTRAIL_NOTIFY_SECRET"
URLS_ENV = "JOBTRAIL_NOTIFY"
DASHBOARD_ENV = "JOBTRAIL_DASHBOARD_URL"
DEFAULT_TIMEOUT = timedelta(seconds=10)
_BOUNDS = Bounds(floor=1.0, ceiling=6 * 3600.0)  # a Retry-After of a year waits 6 h


@dataclass(frozen=True, kw_only=True)
class Endpoint:
    url: str
    slack: bool = False

    @property
    def label(self) -> str:
        """How attempts name this endpoint: its host and a hash of its URL, never the URL."""
        digest = hashlib.sha256(self.url.encode()).hexdigest()[:10]
        return f"{urlsplit(self.url).hostname or '?'}#{digest}"


def endpoint(text: str, field: str = "--notify") -> Endpoint:
    """One configured endpoint; InvalidInput naming `field` when it is no http(s) URL."""
    url, slack = endpoint_url(text, field)
    return Endpoint(url=url, slack=slack)


def signer(secret: str, where: str = SECRET_ENV) -> Webhook:
    """The Standard Webhooks signer of `secret` (`whsec_` + base64), kept in `where`."""
    try:
        return Webhook(secret.strip())
    except Exception as exc:  # the package raises bare errors on a malformed secret
        raise InvalidInput(
            f"the notices' signing secret in {where} is not a Standard Webhooks secret (whsec_...)"
        ) from exc


class Notifier:
    def __init__(
        self,
        ledger: Ledger | None,
        endpoints: Sequence[Endpoint],
        *,
        sign: Webhook | None = None,
        dashboard: str | None = None,
        timeout: timedelta = DEFAULT_TIMEOUT,
        hold: timedelta | None = None,
        interval: float = 1.0,
        batch: int = 50,
        rand: random.Random | None = None,
        clock: Clock | None = None,
    ) -> None:
        """`ledger` None: no outbox (`jobtrail notify test` posts a sample with `post`)."""
        self._ledger, self.endpoints, self.sign = ledger, list(endpoints), sign
        self.clock = clock or (ledger.clock if ledger is not None else SystemClock())
        self.dashboard = dashboard.rstrip("/") if dashboard else None
        self.timeout, self.interval, self.batch = timeout, interval, batch
        # a claim outlives a round in which every endpoint times out
        self.hold = hold or timeout * (len(self.endpoints) + 1) + timedelta(seconds=30)
        self.rand = rand or random.SystemRandom()
        self.wake = asyncio.Event()
        self._session: aiohttp.ClientSession | None = None

    @property
    def ledger(self) -> Ledger:
        assert self._ledger is not None, "this notifier has no ledger"
        return self._ledger

    async def __aenter__(self) -> Notifier:
        self._session = single_shot(
            aiohttp.ClientSession(trust_env=False, cookie_jar=aiohttp.DummyCookieJar())
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()

    async def run(self, stop: asyncio.Event) -> None:
        """Deliver due notices until `stop` is set; a failing round is logged and tried
        again, never raised (the worker beside it goes on)."""
        while not stop.is_set():
            try:
                await self.deliver_due()
            except JobtrailError as exc:
                log.warning("notices not delivered this round: %s", exc)
            except Exception:  # a notifier's defect must not stop the worker beside it
                log.exception("notices not delivered this round")
            self.wake.clear()
            sleeping = [asyncio.create_task(e.wait()) for e in (stop, self.wake)]
            await asyncio.wait(sleeping, timeout=self.interval, return_when="FIRST_COMPLETED")
            for task in sleeping:
                task.cancel()

    async def deliver_due(self) -> int:
        """One pass: every notice due now, delivered concurrently; how many were tried."""
        if not self.endpoints:
            return 0
        boxes = await self.ledger.claim_notices(self.batch, self.hold)
        await asyncio.gather(*(self.deliver(box) for box in boxes))
        return len(boxes)

    async def deliver(self, box: Outboxed) -> Outboxed:
        """One round of `box`: post it to each endpoint that has not taken it, record."""
        done = {
            a.endpoint
            for a in await self.ledger.delivery_attempts(box.notice.event_id)
            if a.outcome == "delivered"
        }
        attempts: list[DeliveryAttempt] = []
        failed: str | None = None
        hint: str | None = None
        throttled = False
        for ep in self.endpoints:
            if ep.label in done:
                continue
            attempt, retry_after = await self.post(ep, box.notice)
            attempts.append(attempt)
            if attempt.outcome != "delivered":
                failed = failed or f"{ep.label}: {attempt.detail}"
                hint = retry_after or hint
                throttled = throttled or attempt.http_status in (429, 503)
        now = self.clock.now()
        retry_at = next_call_at(
            now=now, attempt=box.tries, retry_after=hint, backoff=DELIVERY_BACKOFF,
            rand=self.rand, bounds=_BOUNDS, throttled=throttled,
        )  # fmt: skip
        after = after_round(box, now, failed, retry_at)
        await self.ledger.finish_notice(after, attempts)
        if after.gave_up_at is not None:
            log.error("notice %s given up: %s", box.notice.event_id, failed)
        return after

    def body(self, ep: Endpoint, notice: Notice) -> bytes:
        link = (
            f"{self.dashboard}{notice.data['dashboard_path']}"
            if self.dashboard and notice.data.get("dashboard_path")
            else None
        )
        if ep.slack:
            document = {"text": slack_text(notice, link)}
        else:
            document = notice.document() | {"data": {**notice.data, "dashboard_url": link}}
        return json.dumps(document, ensure_ascii=False, sort_keys=True).encode()

    def headers(self, notice: Notice, body: bytes) -> dict[str, str]:
        now = self.clock.now()
        headers = {
            "content-type": "application/json",
            "webhook-id": notice.event_id,
            "webhook-timestamp": str(int(now.timestamp())),
        }
        if self.sign is not None:
            headers["webhook-signature"] = self.sign.sign(notice.event_id, now, body)
        return headers

    async def post(self, ep: Endpoint, notice: Notice) -> tuple[DeliveryAttempt, str | None]:
        """One delivery: the attempt as recorded, and the endpoint's Retry-After if any."""
        assert self._session is not None, "use the notifier as an async context manager"
        body = self.body(ep, notice)
        at = self.clock.now()
        status: int | None = None
        retry_after: str | None = None
        try:
            async with self._session.post(
                ep.url,
                data=body,
                headers=self.headers(notice, body),
                allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=self.timeout.total_seconds()),
            ) as answer:
                status, retry_after = answer.status, answer.headers.get("Retry-After")
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            detail = f"no answer: {type(exc).__name__}"
            return self._attempt(notice, ep, at, "unanswered", None, detail), None
        outcome = "delivered" if 200 <= status < 300 else "refused"
        # the answer's body is not kept: an endpoint is no provider, and may echo anything
        detail = f"HTTP {status}"
        return self._attempt(notice, ep, at, outcome, status, detail), retry_after

    def _attempt(
        self, notice: Notice, ep: Endpoint, at: datetime, outcome: str, status: int | None,
        detail: str,
    ) -> DeliveryAttempt:  # fmt: skip
        return DeliveryAttempt(
            event_id=notice.event_id, endpoint=ep.label, at=at, outcome=outcome,
            http_status=status, detail=detail,
        )  # fmt: skip
