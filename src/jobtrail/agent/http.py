"""The agent tools over MCP's Streamable HTTP transport, at `/mcp` of an aiohttp app (next
to the dashboard in `jobtrail serve`, or alone in `jobtrail mcp --http`).

Each agent authenticates with its own bearer token (JOBTRAIL_AGENT_TOKENS or a file of
names and token hashes, dashboard/access.py): the token names the agent, the ledger records
it as `agent:NAME` for the action policy, and its task ids are bound to it. A request
without a valid token gets 401 before the MCP SDK sees it, and the token never goes further
than that check. A request whose `Origin` header is present and neither the server's own
origin nor one of the allowed origins (`--allow-origin`, JOBTRAIL_ALLOW_ORIGINS) gets 403
first, as the MCP specification's Streamable HTTP transport requires (2025-11-25): a page in
a browser may not drive an agent's tools, whatever token it holds. A request without an
`Origin` (every client that is not a browser) is judged by its token alone.

A client on protocol 2026-07-28 has no session: any number of `serve` processes on one
PostgreSQL ledger can answer any of its requests and tasks (`Mcp-Name` routing then reaches
a process that can resolve the task, whichever it is), as they answer any request that
names no session. A handshake-era client (2025-11-25 and before) gets a session
(`Mcp-Session-Id`) from the process that answered its `initialize`, since that is where its
`resources/subscribe` updates are sent from (on its GET stream); the session is bound to the
agent that opened it (another agent's token on it reads as an unknown session), and it ends
on the client's DELETE or after 30 minutes with no request and no open stream.

aiohttp serves; the SDK speaks ASGI: `_asgi` hands it one request at a time."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable, MutableMapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from typing import Any

from aiohttp import web
from mcp.server import MCPServer
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from jobtrail.agent.identity import SCOPE_KEY, checked_origin
from jobtrail.dashboard.access import Agent, match_token

PATH = "/mcp"
MAX_BODY = 4 * 1024 * 1024  # what the SDK's own transport accepts
log = logging.getLogger("jobtrail.agent")
Message = MutableMapping[str, Any]


class McpHttp:
    """`/mcp` for `server`, open to `agents` (none: every request is refused with 401)."""

    def __init__(
        self,
        server: MCPServer[Any],
        agents: list[Agent],
        *,
        host: str,
        origins: Sequence[str] = (),
    ) -> None:
        self._agents = [(agent.token_hash, agent) for agent in agents]
        self._origins = frozenset(checked_origin(o, "--allow-origin") for o in origins)
        # Not the SDK's DNS-rebinding guard (on by default for a loopback address): it checks
        # Host too, and a reverse proxy in front of a loopback `serve` would be refused by it
        # for its public Host header. Origin is checked here instead (`refused_origin`), and
        # every request needs an agent's bearer token besides.
        unguarded = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        # Two of the SDK's managers over one server: sessions for the handshake-era
        # clients that open one (`initialize`) and come back with it (`Mcp-Session-Id`),
        # and single exchanges for everything else, answered by any process.
        server.streamable_http_app(stateless_http=False, host=host, transport_security=unguarded)
        self.manager: StreamableHTTPSessionManager = server.session_manager
        self.single = StreamableHTTPSessionManager(
            app=self.manager.app, stateless=True, security_settings=unguarded
        )
        self._stopping = asyncio.Event()
        # What else runs while it serves: `serve` sets its resource-update watcher here.
        self.updates: Callable[[], AbstractAsyncContextManager[None]] = nullcontext

    def add_routes(self, app: web.Application) -> None:
        app.router.add_route("*", PATH, self.handle)
        app.on_shutdown.append(self._stop_streams)

    async def _stop_streams(self, _: web.Application) -> None:
        """A session's GET stream lasts as long as its client; on shutdown it ends first,
        so that stopping does not wait out the app's shutdown timeout for it."""
        self._stopping.set()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The SDK's session managers, for as long as the app serves."""
        async with self.manager.run(), self.single.run(), self.updates():
            yield

    def agent(self, authorization: str | None) -> Agent | None:
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        return match_token(self._agents, token.strip())

    def refused_origin(self, request: web.Request) -> str | None:
        """The request's Origin when it is present and not allowed, else None."""
        origin = request.headers.get("Origin")
        if origin is None:
            return None
        given = origin.strip().rstrip("/").lower()
        if given in self._origins or given.partition("://")[2] == request.host.lower():
            return None
        return origin

    async def handle(self, request: web.Request) -> web.StreamResponse:
        refused = self.refused_origin(request)
        if refused is not None:
            return web.json_response(
                {
                    "error": f"/mcp does not answer pages of the origin {refused[:100]!r}: "
                    "allow it with `--allow-origin` (JOBTRAIL_ALLOW_ORIGINS), see `jobtrail "
                    "docs agents`"
                },
                status=403,
            )
        agent = self.agent(request.headers.get("Authorization"))
        if agent is None:
            why = "a bearer token of an agent" if self._agents else "JOBTRAIL_AGENT_TOKENS set"
            return web.json_response(
                {"error": f"/mcp needs {why}: see `jobtrail docs agents`"},
                status=401,
                headers={"WWW-Authenticate": 'Bearer realm="jobtrail"'},
            )
        body = await _body(request)
        if body is None:
            return web.json_response({"error": "request body over 4 MiB"}, status=413)
        manager = self.manager if _in_session(request, body) else self.single
        return await _asgi(manager, request, agent, body, self._stopping)


def _in_session(request: web.Request, body: bytes) -> bool:
    """Whether a request opens a handshake-era session or goes on with one: an
    `initialize`, one naming its session, or a GET stream or DELETE (of a session)."""
    if request.method != "POST" or "Mcp-Session-Id" in request.headers:
        return True
    if b'"initialize"' not in body:
        return False
    try:
        message = json.loads(body)
    except ValueError:
        return False
    return isinstance(message, dict) and message.get("method") == "initialize"


async def _body(request: web.Request) -> bytes | None:
    """The request's body up to MAX_BODY (None past it), whatever the app's own limit (the
    webhook receiver's, in `serve`, is far smaller than a job's request may be)."""
    if request.content_length is not None and request.content_length > MAX_BODY:
        return None
    body = bytearray()
    async for chunk in request.content.iter_chunked(64 * 1024):
        body += chunk
        if len(body) > MAX_BODY:
            return None
    return bytes(body)


# C901: one request's way through auth, routing and the SDK's session manager, read top to bottom
async def _asgi(  # noqa: C901
    manager: StreamableHTTPSessionManager,
    request: web.Request,
    agent: Agent,
    body: bytes,
    stopping: asyncio.Event,
) -> web.StreamResponse:
    """Run one aiohttp request through the SDK's ASGI handler, streaming its answer back."""
    host, port = _server_address(request)
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.raw_path.split("?", 1)[0].encode("latin-1"),
        "query_string": request.query_string.encode("latin-1"),
        "root_path": "",
        # The credential stops here: nothing past this point can show it.
        "headers": [
            (name.lower().encode("latin-1"), value.encode("latin-1"))
            for name, value in request.headers.items()
            if name.lower() != "authorization"
        ],
        "client": request.transport.get_extra_info("peername") if request.transport else None,
        "server": (host, port),
        SCOPE_KEY: agent.actor,
        # What the SDK binds a handshake-era session to: the agent, never its token.
        "user": AuthenticatedUser(AccessToken(token="", client_id=agent.actor, scopes=[])),
    }
    answered = asyncio.Event()
    response: web.StreamResponse | None = None
    delivered = False

    async def receive() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        # The SDK listens for the client going away while it streams an answer.
        while not answered.is_set() and not stopping.is_set():
            if request.transport is None or request.transport.is_closing():
                break
            try:
                await asyncio.wait_for(answered.wait(), timeout=1.0)
            except TimeoutError:
                continue
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal response
        if message["type"] == "http.response.start":
            headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in message["headers"]]
            response = web.StreamResponse(status=message["status"])
            for name, value in headers:
                response.headers.add(name, value)
            await response.prepare(request)
        elif message["type"] == "http.response.body" and response is not None:
            await response.write(message.get("body", b""))
            if not message.get("more_body", False):
                await response.write_eof()
                answered.set()

    try:
        await manager.handle_request(scope, receive, send)
    finally:
        answered.set()
    if response is None:
        log.error("the MCP transport sent no answer to %s %s", request.method, request.path)
        return web.json_response({"error": "no answer"}, status=500)
    return response


def _server_address(request: web.Request) -> tuple[str, int]:
    sockname = request.transport.get_extra_info("sockname") if request.transport else None
    if isinstance(sockname, tuple) and len(sockname) >= 2:
        return str(sockname[0]), int(sockname[1])
    return request.host, 0


async def serve_http(
    server: MCPServer[Any],
    agents: list[Agent],
    *,
    host: str,
    port: int,
    worker: asyncio.Task[Any] | None,
    stop: asyncio.Event,
    on_bound: Any = None,
    origins: Sequence[str] = (),
) -> None:
    """Serve `/mcp` alone until `stop` is set (or the worker task ends with an error);
    `on_bound(host, port)` is told where it listens (port 0 picks a free one)."""
    endpoint = McpHttp(server, agents, host=host, origins=origins)
    app = web.Application(client_max_size=MAX_BODY)
    endpoint.add_routes(app)
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=5)
    await runner.setup()
    try:
        async with endpoint.running():
            await web.TCPSite(runner, host, port).start()
            bound_host, bound_port = runner.addresses[0][:2]
            if on_bound is not None:
                on_bound(bound_host, bound_port)
            waiting = [asyncio.create_task(stop.wait())]
            if worker is not None:
                waiting.append(worker)
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            waiting[0].cancel()
    finally:
        await runner.cleanup()
