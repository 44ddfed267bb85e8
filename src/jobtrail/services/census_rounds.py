"""The scheduled census of `serve` (`--census PROVIDER --census-every 24h`; off unless a
provider is named): a census of each provider in turn, every period, recorded as any
census is (services/census.py) under the actor `worker:census`, and logged: a second job as
an error, jobs ended here or unknown here as a warning. It never acts on what it finds: a
person adopts or cancels (`jobtrail census --adopt/--cancel`, the dashboard)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from contextlib import suppress
from datetime import timedelta

from jobtrail.core.census import Category, summary
from jobtrail.errors import JobtrailError
from jobtrail.ledger import Ledger
from jobtrail.providers.code.contract import CodeSpec
from jobtrail.providers.file.spec import ProviderSpec
from jobtrail.providers.registry import ProviderRegistry
from jobtrail.services.census import Census, take_census

log = logging.getLogger("jobtrail.census")
ACTOR = "worker:census"


async def census_rounds(
    ledger: Ledger,
    registry: ProviderRegistry,
    specs: Sequence[ProviderSpec | CodeSpec],
    *,
    every: timedelta,
    since: timedelta,
    stop: asyncio.Event,
) -> None:
    """Take a census of each of `specs` now and every `every` until `stop` is set."""
    while not stop.is_set():
        for spec in specs:
            try:
                census = await take_census(ledger, registry, spec, actor=ACTOR, since=since)
            except JobtrailError as exc:  # the next round tries again
                log.warning("census of %s failed: %s", spec.name, exc)
            else:
                said(census)
        with suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every.total_seconds())


def said(census: Census) -> None:
    """One log line per census, louder the more a person must do."""
    tally = census.tally
    extra = {"provider": census.provider, "census": {c.value: n for c, n in tally.items()}}
    line = f"census of {census.provider}: {summary(tally)}; {census.reach.words()}"
    if tally[Category.SECOND_JOB]:
        log.error("%s: A SECOND JOB, the evidence of a duplicate create", line, extra=extra)
    elif tally[Category.ENDED_HERE] or tally[Category.UNKNOWN_HERE]:
        log.warning("%s: adopt or cancel them (jobtrail census --help)", line, extra=extra)
    else:
        log.info("%s", line, extra=extra)
