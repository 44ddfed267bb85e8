"""`notifications/resources/updated` for the operations' resources (jobtrail://operations/ID):
a watcher reads the ledger (never a process's memory, so a change made by any worker or
server on the same ledger is seen) and publishes one update per state change it finds, on
the MCP server's subscription bus; a client hears it on a `subscriptions/listen` stream
naming that resource (protocol 2026-07-28), or on its session after `resources/subscribe`
(the handshake-era protocols; agent/subscriptions.py)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from mcp.server.subscriptions import ResourceUpdated, SubscriptionBus

from jobtrail.core.states import State
from jobtrail.errors import JobtrailError
from jobtrail.ledger import Ledger

OPERATION_URI = "jobtrail://operations/{operation_id}"  # each operation, as a resource
WATCH_SECONDS = 0.5
WATCHED = 500  # the newest operations watched
log = logging.getLogger("jobtrail.agent")


def operation_uri(operation_id: str) -> str:
    return OPERATION_URI.format(operation_id=operation_id)


async def watch_operations(
    ledger: Ledger, bus: SubscriptionBus, stop: asyncio.Event, every: float = WATCH_SECONDS
) -> None:
    """Publish an update for every operation whose state changed, until `stop` is set."""
    known: dict[str, State] | None = None
    while not stop.is_set():
        try:
            ops = await ledger.list_operations(limit=WATCHED)
        except JobtrailError as exc:
            log.warning("resource updates paused: %s", exc)
        else:
            now = {op.operation_id: op.state for op in ops}
            if known is not None:
                for op_id, state in now.items():
                    # a new operation is news once it has left create_pending
                    if known.get(op_id, State.CREATE_PENDING) is not state:
                        await bus.publish(ResourceUpdated(uri=operation_uri(op_id)))
            known = now
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every)


@contextlib.asynccontextmanager
async def watching(ledger: Ledger, bus: SubscriptionBus) -> AsyncIterator[None]:
    """`watch_operations` for as long as the context lasts (`serve`'s /mcp)."""
    stop = asyncio.Event()
    task = asyncio.create_task(watch_operations(ledger, bus, stop))
    try:
        yield
    finally:
        stop.set()
        await task
