"""`GET /metrics`: the ledger's counts in the Prometheus text format (core/metrics.py).

On `serve`'s own address it is guarded as the dashboard is (`Authorization: Bearer TOKEN`
of an operator or viewer: Prometheus' `authorization` setting); `serve --metrics-listen
HOST:PORT` also opens it, unguarded, on an address of its own (for a scraper on a private
network). Every number is read from the ledger, never from this process's memory, so two
`serve` processes on one ledger answer alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from jobtrail.core.metrics import render
from jobtrail.errors import JobtrailError

if TYPE_CHECKING:
    from jobtrail.dashboard.access import Access
    from jobtrail.ledger import Ledger

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    def __init__(self, ledger: Ledger, access: Access | None) -> None:
        """`access` None: unguarded (a listener of its own)."""
        self.ledger, self.access = ledger, access

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/metrics", self.handle)

    async def handle(self, request: web.Request) -> web.Response:
        if self.access is not None:
            scheme, _, token = request.headers.get("Authorization", "").partition(" ")
            if scheme.lower() != "bearer" or self.access.bearer(token.strip()) is None:
                return web.Response(
                    status=401, text="metrics need an operator's bearer token\n",
                    headers={"WWW-Authenticate": 'Bearer realm="jobtrail"'},
                )  # fmt: skip
        try:
            text = render(await self.ledger.metric_counts())
        except JobtrailError as exc:
            return web.Response(status=503, text=f"ledger unavailable: {exc}\n")
        return web.Response(body=text.encode(), headers={"Content-Type": CONTENT_TYPE})
