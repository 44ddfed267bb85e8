"""The :class:`Simulator`: a fault-injecting provider served by aiohttp on loopback."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from aiohttp import web

from jobtrail.simulator.admin import AdminEndpoints, register_faults
from jobtrail.simulator.create import CreateEndpoint
from jobtrail.simulator.endpoints import JobEndpoints
from jobtrail.simulator.records import CallRecord, SimJob
from jobtrail.simulator.state import SimState
from jobtrail.simulator.vendors import (
    VENDOR_MODES,
    VendorState,
    mount_vendors,
    vendor_request_ids,
)
from jobtrail.simulator.webhooks import WebhookSender, WebhookSigner, build_event, event_id_of

# create bodies carry test faults, never real payloads; 16 MB is plenty
_MAX_REQUEST_BYTES = 16 * 1024 * 1024


class Simulator:
    """A simulated long-running-job provider (the article's API) with per-job faults.

    ``token``: when set, every ``/v1`` request needs ``Authorization: Bearer <token>``.
    ``webhook_url`` + ``webhook_secret``: every job state change is POSTed there,
    signed the Standard Webhooks way (``webhook_signing="standard"``, secret
    ``whsec_<base64>``) or with a hex HMAC (``"hmac"``, raw secret).
    ``record_calls=False`` skips the calls log for benchmarks.
    """

    def __init__(
        self,
        token: str | None = None,
        webhook_url: str | None = None,
        webhook_secret: str | None = None,
        webhook_signing: str = "standard",
        *,
        record_calls: bool = True,
        max_calls: int = 200_000,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if webhook_url is not None and not webhook_secret:
            raise ValueError(
                "webhook_url needs a webhook_secret: the simulator only sends signed events"
            )
        self._signer = WebhookSigner(webhook_secret, webhook_signing) if webhook_secret else None
        self._webhook_url = webhook_url
        self.state = SimState(
            token=token, record_calls=record_calls, max_calls=max_calls, clock=clock
        )
        # the vendor modes (azure-arm, openai-batch, ...) share the token and the clock
        self.vendors = VendorState(token=token, clock=clock)
        self._runner: web.AppRunner | None = None
        self.base_url: str | None = None

    # -- lifecycle ----------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serve on ``host:port`` (0 picks a free port) and return the base URL."""
        if self._runner is not None:
            raise RuntimeError("the simulator is already started")
        if self._webhook_url is not None and self._signer is not None:
            sender = WebhookSender(self._webhook_url, self._signer)
            await sender.start()
            self.state.webhooks = sender
        runner = web.AppRunner(
            self._build_app(), access_log=None, handle_signals=False, shutdown_timeout=1.0
        )
        await runner.setup()
        # a deep backlog: benchmarks open thousands of connections at once
        site = web.TCPSite(runner, host, port, backlog=4096)
        await site.start()
        self._runner = runner
        bound_host, bound_port = runner.addresses[0][:2]
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        self.base_url = f"http://{shown}:{bound_port}"
        return self.base_url

    async def close(self) -> None:
        """Stop serving, cancel job timers and pending webhook deliveries."""
        self.state.close_timers()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self.state.webhooks is not None:
            await self.state.webhooks.close()
            self.state.webhooks = None

    async def __aenter__(self) -> Simulator:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    _answers = 0

    def _build_app(self) -> web.Application:
        app = web.Application(client_max_size=_MAX_REQUEST_BYTES)
        create = CreateEndpoint(self.state)
        jobs = JobEndpoints(self.state)
        app.router.add_post("/v1/reports", create.handle)
        app.router.add_get("/v1/reports", jobs.list_reports)
        app.router.add_get("/v1/jobs/{job_id}", jobs.status)
        app.router.add_post("/v1/jobs/{job_id}/cancel", jobs.cancel)
        app.router.add_get("/v1/jobs/{job_id}/result", jobs.result)
        AdminEndpoints(self.state).add_routes(app)
        mount_vendors(app, self.vendors)
        app.on_response_prepare.append(self._stamp_request_id)
        return app

    async def _stamp_request_id(self, request: web.Request, response: web.StreamResponse) -> None:
        """Like real providers, name every answer so support can find it in their logs."""
        self._answers += 1
        vendor = vendor_request_ids(request, self._answers)
        if vendor is not None:  # Azure names its answers in its own headers
            response.headers.update(vendor)
            return
        # a fault may have named the answer already (echo_credentials, hostile_text)
        response.headers.setdefault("X-Request-ID", f"req_sim_{self._answers:08d}")

    # -- inspection and control (same loop as the server) --------------------

    @property
    def jobs(self) -> Mapping[str, SimJob]:
        """Live mapping job_id -> job record."""
        return self.state.jobs

    @property
    def calls(self) -> list[CallRecord]:
        """Every recorded call, oldest first (empty with ``record_calls=False``)."""
        return self.state.calls

    def stats(self) -> dict[str, Any]:
        return self.state.stats()

    def set_faults(
        self,
        client_reference: str | None = None,
        faults: Mapping[str, Any] | None = None,
        *,
        default: Mapping[str, Any] | None = None,
    ) -> None:
        """Faults for jobs created with ``client_reference``; without one, for all later jobs."""
        register_faults(
            self.state, client_reference=client_reference, faults=faults, default=default
        )

    def reset(self) -> None:
        self.state.reset()
        self.vendors.reset()

    def set_vendor_faults(self, mode: str, faults: Mapping[str, Any]) -> None:
        """Faults for the jobs a vendor mode (``openai-batch``, ``azure-arm``, ...) makes next."""
        if mode not in VENDOR_MODES:
            raise ValueError(f"no vendor mode {mode!r}; known: {', '.join(VENDOR_MODES)}")
        self.vendors.set_faults(mode, faults)

    def vendor_summary(self, mode: str) -> dict[str, Any]:
        """What a vendor mode saw: jobs created, calls by kind, each job's phase."""
        return self.vendors.summary(mode)

    def signed_event(self, job_id: str, state: str | None = None) -> tuple[dict[str, str], bytes]:
        """A signed ``job.updated`` event for a job's current state (or ``state``), unsent."""
        if self._signer is None:
            raise RuntimeError("signed_event needs a webhook_secret")
        job = self.state.jobs.get(job_id)
        if job is None:
            raise KeyError(job_id)
        body = build_event(job, state=state)
        return self._signer.headers(event_id_of(body), body), body

    async def drain_webhooks(self) -> None:
        """Wait until every scheduled webhook delivery has been attempted."""
        if self.state.webhooks is not None:
            await self.state.webhooks.drain()
