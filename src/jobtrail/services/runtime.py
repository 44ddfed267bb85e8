"""Assembling a working jobtrail: store, ledger, providers, runner and worker, for the
drivers (CLI, MCP server, `serve`) that need to move operations, not just read them."""

from __future__ import annotations

import gc
import logging
import os
import socket
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from jobtrail.clock import Clock
from jobtrail.core.states import State
from jobtrail.ledger import Ledger, OperationQuery, open_ledger
from jobtrail.ledger.policy import ActionPolicy, policy_from_env
from jobtrail.providers.code.contract import CodeProvider, Factory
from jobtrail.providers.code.plugins import Plugin, load_plugins
from jobtrail.providers.credentials import Unset, unset_by_provider
from jobtrail.providers.registry import ProviderRegistry
from jobtrail.results import Results, open_results
from jobtrail.services.lateness import FLUSH_SECONDS, flush, flushing
from jobtrail.worker.loop import Worker
from jobtrail.worker.runner import Runner

log = logging.getLogger("jobtrail.providers")


def default_worker_id() -> str:
    return f"worker:{socket.gethostname()}:{os.getpid()}"


@dataclass
class Runtime:
    ledger: Ledger
    providers: ProviderRegistry
    results: Results
    runner: Runner
    worker: Worker
    clock: Clock

    async def flush_lateness(self) -> None:
        """Give the poll lateness counted so far to the ledger now, rather than at the next
        flush (services/lateness.py: every few seconds, and when the runtime ends)."""
        await flush(self.ledger, self.runner.lateness)

    async def unset_credentials(self, only: str | None = None) -> list[Unset]:
        """The credential variables that open operations' providers read (only `only`'s,
        if given) and that are not set in this process, once per provider."""
        if only is not None:
            op = await self.ledger.get(only)
            ops = [] if op.state.ends_automation else [op]
        else:
            ops = await self.ledger.list_operations(states=_OPEN, limit=1000)
        return unset_by_provider((op.provider, op.provider_config) for op in ops)


_OPEN = [state for state in State if not state.ends_automation]


@asynccontextmanager
async def runtime(
    db: str,
    data_dir: str | Path,
    *,
    audit_key: bytes | None = None,
    worker_id: str | None = None,
    concurrency: int = 50,
    lease_for: timedelta = timedelta(seconds=60),
    clock: Clock | None = None,
    idle_poll: float = 1.0,
    record_lateness: bool = False,
    lateness_every: float = FLUSH_SECONDS,
    create: bool = True,
    results: str | None = None,
    actions: ActionPolicy | None = None,
    provider_modules: Sequence[str] = (),
    providers: Sequence[CodeProvider] = (),
) -> AsyncIterator[Runtime]:
    """`results` is the result store's URL (see jobtrail.results); files under `data_dir`
    when None. `actions` is the action policy; JOBTRAIL_POLICY's (or the default) when None.
    Code providers: every installed entry point, the modules in `provider_modules`, and the
    provider objects in `providers` (which win, by name). A module that cannot be loaded
    fails here, first; an installed entry point that cannot is logged and left missing.
    The poll lateness the runner counts is given to the ledger every `lateness_every`
    seconds and when the runtime ends."""
    plugins = load_plugins(provider_modules)
    for given in providers:
        plugins[given.name] = Plugin(
            name=given.name, factory=_always(given), origin="a provider object given to it"
        )
    actions = actions or policy_from_env()
    stored = open_results(results, data_dir=data_dir, ledger=db)  # a bad URL fails here first
    ledger = await open_ledger(
        db, audit_key=audit_key, create=create, clock=clock, group_commit=True, actions=actions
    )
    clock = ledger.clock  # the ledger's clock unless one was given (a test's)
    registry = ProviderRegistry(connections=max(10, concurrency), plugins=plugins)
    try:
        await _say_unusable(ledger, plugins.broken)
        runner = Runner(
            ledger,
            registry,
            stored,
            actor=worker_id or default_worker_id(),
            lease_for=lease_for,
        )
        worker = Worker(
            runner,
            clock,
            concurrency=concurrency,
            idle_poll=idle_poll,
            record_lateness=record_lateness,
        )
        async with flushing(ledger, runner.lateness, lateness_every):
            yield Runtime(
                ledger=ledger,
                providers=registry,
                results=stored,
                runner=runner,
                worker=worker,
                clock=clock,
            )
    finally:
        await registry.close()
        await stored.close()
        await ledger.close()


async def _say_unusable(ledger: Ledger, broken: Mapping[str, str]) -> None:
    """Name an installed code provider that cannot be used here (its extra not installed)
    only when the ledger holds open operations it would drive: a process that never needs
    it (no AWS operation, say) starts without a word about it."""
    for name, why in broken.items():
        page = await ledger.find_operations(OperationQuery(provider=name, states=_OPEN, limit=1))
        if page.total:
            log.warning(
                "%s; %d open operation(s) of %r are left to workers that have it",
                why,
                page.total,
                name,
            )


def settle_heap() -> None:
    """Once start-up is over, in a long-running process (`worker`, `serve`): move every
    object alive now (modules, the runtime, provider specs) out of the cyclic collector's
    reach, so later collections walk only what the work itself makes (the previous
    measurement put collection at 8.7 % of a lifecycle's CPU). Not for a library's embedded
    client: the host's objects are not ours to freeze."""
    gc.collect()
    gc.freeze()


def _always(provider: CodeProvider) -> Factory:
    """A factory for a provider object made already: it takes no settings."""

    def made(settings: Mapping[str, Any]) -> CodeProvider:
        return provider

    return made
