"""Where an operation's resource updates go: the SDK's subscription bus, heard on the
`subscriptions/listen` streams of clients on protocol 2026-07-28, and the sessions of
handshake-era clients (2025-11-25 and before) that subscribed with `resources/subscribe`,
each told with `notifications/resources/updated` on its own session.

A subscription is a read: the uri must be an operation's resource that the caller may read
under the read policy (issue 36), checked by reading it as `resources/read` does and
refused in the same words. It lasts until `resources/unsubscribe` or the end of the
session (the SDK unwinds the connection's exit stack when its client goes away)."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from typing import Any

from mcp.server import MCPServer
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import (
    ResourceError,
    ResourceNotFoundError,
    UnexpectedResourceError,
)
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ResourceUpdated,
    ServerEvent,
    SubscriptionBus,
)
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    EmptyResult,
    SubscribeRequestParams,
    UnsubscribeRequestParams,
)

from jobtrail.agent.watch import OPERATION_URI

SEND_SECONDS = 5.0  # a session that takes longer to accept an update misses it
_OPERATION = re.compile(re.escape(OPERATION_URI).replace(r"\{operation_id\}", "[^/]+"))
log = logging.getLogger("jobtrail.agent")


class ResourceUpdates:
    """A `SubscriptionBus` (the one the server's `subscriptions/listen` hears) that also
    tells the handshake-era sessions subscribed to an updated resource."""

    def __init__(self, bus: SubscriptionBus | None = None) -> None:
        self._bus: SubscriptionBus = bus or InMemorySubscriptionBus()
        self._sessions: dict[str, set[Connection]] = {}  # uri -> subscribed sessions
        self._uris: dict[Connection, set[str]] = {}  # session -> its subscriptions

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        return self._bus.subscribe(listener)

    async def publish(self, event: ServerEvent) -> None:
        await self._bus.publish(event)
        if isinstance(event, ResourceUpdated):
            for session in list(self._sessions.get(event.uri, ())):
                try:
                    async with asyncio.timeout(SEND_SECONDS):
                        await session.send_resource_updated(event.uri)  # never raises
                except TimeoutError:
                    log.warning("a subscribed MCP session did not take an update in time")

    def serve(self, server: MCPServer[Any]) -> None:
        """Serve `resources/subscribe` and `resources/unsubscribe` on `server`; with them
        the server answers a handshake-era client `resources.subscribe: true`."""

        async def on_subscribe(
            ctx: ServerRequestContext[Any, Any], params: SubscribeRequestParams
        ) -> EmptyResult:
            session = _session(ctx)
            if not session.has_standalone_channel:
                raise MCPError(
                    code=INVALID_REQUEST,
                    message="resources/subscribe needs a session to send the updates on: "
                    "`initialize` first, and send its Mcp-Session-Id with each request",
                )
            await _check_readable(server, ctx, params.uri)
            self._add(session, params.uri)
            return EmptyResult()

        async def on_unsubscribe(
            ctx: ServerRequestContext[Any, Any], params: UnsubscribeRequestParams
        ) -> EmptyResult:
            self._remove(_session(ctx), params.uri)
            return EmptyResult()

        # MCPServer takes no subscribe handler of its own; the low-level server does.
        lowlevel = server._lowlevel_server
        lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, on_subscribe)
        lowlevel.add_request_handler(
            "resources/unsubscribe", UnsubscribeRequestParams, on_unsubscribe
        )

    def _add(self, session: Connection, uri: str) -> None:
        if session not in self._uris:
            self._uris[session] = set()
            session.exit_stack.callback(self._forget, session)
        self._uris[session].add(uri)
        self._sessions.setdefault(uri, set()).add(session)

    def _remove(self, session: Connection, uri: str) -> None:
        self._uris.get(session, set()).discard(uri)
        sessions = self._sessions.get(uri)
        if sessions is not None:
            sessions.discard(session)
            if not sessions:
                del self._sessions[uri]

    def _forget(self, session: Connection) -> None:
        for uri in self._uris.pop(session, set()):
            self._remove(session, uri)


def _session(ctx: ServerRequestContext[Any, Any]) -> Connection:
    # `ctx.session` is a proxy made for each request; the connection behind it is the
    # session that lasts, and the only handle by which a later request finds it again.
    return ctx.session._connection


async def _check_readable(
    server: MCPServer[Any], ctx: ServerRequestContext[Any, Any], uri: str
) -> None:
    """Read `uri` as the caller would, and refuse as `resources/read` refuses: a uri that
    is no operation's, an unknown operation (-32602), one the caller may not read."""
    if _OPERATION.fullmatch(uri) is None:
        raise MCPError(
            code=INVALID_PARAMS,
            message=f"{uri[:200]!r} is not an operation's resource: subscribe to "
            f"{OPERATION_URI}, with the operation id submit_job returned",
            data={"uri": uri},
        )
    try:
        await server.read_resource(uri, Context(request_context=ctx, mcp_server=server))
    except ResourceError as err:
        if isinstance(err, UnexpectedResourceError):
            log.exception("reading %r for a subscription failed", uri)
        code = INVALID_PARAMS if isinstance(err, ResourceNotFoundError) else INTERNAL_ERROR
        raise MCPError(code=code, message=str(err), data={"uri": uri}) from None
