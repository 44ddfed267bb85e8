"""The scheduled packing of `serve` (`--pack-after 7d --pack-every 1h`; off unless
--pack-after is given): `Ledger.pack` at start and every period, logged, under the actor of
whoever started `serve` (JOBTRAIL_ACTOR, else cli:$USER): packing is a prune, a person's
decision under the action policy, which workers are not allowed by default. Each batch is
its own transaction, so stopping mid-round loses nothing (ledger/packing.py)."""

from __future__ import annotations

import asyncio
import logging
from contextlib import suppress
from datetime import timedelta

from jobtrail.errors import JobtrailError
from jobtrail.ledger import Ledger

log = logging.getLogger("jobtrail.pack")


async def pack_rounds(
    ledger: Ledger, *, actor: str, after: timedelta, every: timedelta, stop: asyncio.Event
) -> None:
    """Pack what finished more than `after` ago, now and every `every` until `stop`."""
    while not stop.is_set():
        try:
            batches = await ledger.pack(after, actor=actor)
        except JobtrailError as exc:  # the next round tries again
            log.warning("packing failed: %s", exc)
        else:
            packed = sum(len(b.operations) for b in batches)
            if packed:
                log.info("packed %d finished operations in %d batches", packed, len(batches))
        with suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every.total_seconds())
