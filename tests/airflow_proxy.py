"""A small loopback proxy between jobtrail and the Airflow test server, to lose answers for
real: it forwards each request as it came, and can forward a create (POST .../dagRuns)
and then drop the connection instead of answering, or answer the next GETs of a DAG run
with a 404 of its own (a stale read) without forwarding them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import aiohttp
from aiohttp import web

from wire import WireProxy, behind

_HOP = {"host", "content-length", "transfer-encoding", "connection"}


@dataclass
class Proxy:
    target: str
    base_url: str = ""
    drop_create_answers: int = 0  # creates forwarded whose answer is dropped
    fake_run_404s: int = 0  # GETs of a run answered 404 here, after a dropped create
    seen: list[tuple[str, str, int | None]] = field(default_factory=list)  # method, path, status


@asynccontextmanager
async def proxy(target: str) -> AsyncIterator[Proxy]:
    # The wire check's recording proxy (tests/wire.py) goes in front of this one, closest to
    # jobtrail (the answers made up here are on jobtrail's wire); behind it, Airflow itself.
    target = behind(target)
    state = Proxy(target=target)
    session = aiohttp.ClientSession(auto_decompress=False)

    async def forward(request: web.Request) -> web.StreamResponse:
        path = request.path_qs
        is_create = request.method == "POST" and request.path.endswith("/dagRuns")
        is_run_get = request.method == "GET" and "/dagRuns/" in request.path
        if is_run_get and state.fake_run_404s > 0 and not request.path.endswith("/dagRuns"):
            state.fake_run_404s -= 1
            state.seen.append((request.method, path, 404))
            return web.json_response({"detail": "not found (the proxy's stale read)"}, status=404)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
        body = await request.read()
        async with session.request(
            request.method, target + path, headers=headers, data=body, allow_redirects=False
        ) as answer:
            content = await answer.read()
            if is_create and state.drop_create_answers > 0:
                state.drop_create_answers -= 1
                state.seen.append((request.method, path, None))
                transport = request.transport
                if transport is not None:
                    transport.close()  # the run exists; its answer never arrives
                return web.Response(status=500)
            state.seen.append((request.method, path, answer.status))
            kept = {k: v for k, v in answer.headers.items() if k.lower() not in _HOP}
            return web.Response(status=answer.status, body=content, headers=kept)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", forward)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    wire = WireProxy(f"http://127.0.0.1:{port}")
    state.base_url = wire.start()
    try:
        yield state
    finally:
        wire.stop()
        await runner.cleanup()
        await session.close()
