"""Giving a worker's poll lateness counts (core/lateness.py) to the ledger: every `every`
seconds while the runtime lasts, and once more when it ends, each time in one statement
(nothing when nothing was counted). Counts not yet given when the process is killed
(SIGKILL, a power cut) are lost, a few seconds' worth: they are metrics, never an
operation's state. A flush the ledger refuses (busy, unreachable) keeps its counts for the
next one."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from jobtrail.core.lateness import Tally
from jobtrail.errors import JobtrailError
from jobtrail.ledger import Ledger

FLUSH_SECONDS = 5.0
log = logging.getLogger("jobtrail.metrics")


async def flush(ledger: Ledger, tally: Tally) -> None:
    counts = tally.take()
    if not counts:
        return
    try:
        await ledger.add_poll_lateness(counts)
    except BaseException:
        tally.add(counts)  # for the next flush (or lost with the process, if this is its end)
        raise


@contextlib.asynccontextmanager
async def flushing(
    ledger: Ledger, tally: Tally, every: float = FLUSH_SECONDS
) -> AsyncIterator[None]:
    stop = asyncio.Event()

    async def timer() -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), every)
            stopping = stop.is_set()  # read before the flush: a stop during it flushes again
            try:
                await flush(ledger, tally)
            except JobtrailError as exc:
                log.warning("poll lateness counts not written yet (kept for later): %s", exc)
            except Exception:  # a metric never stops the worker, nor its shutdown
                log.exception("poll lateness counts not written (kept for later)")
            if stopping:
                return

    task = asyncio.create_task(timer())
    try:
        yield
    finally:
        stop.set()
        await task  # its last round is the flush at the end
