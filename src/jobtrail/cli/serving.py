"""`jobtrail serve`: the worker and the webhook receiver in one process."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import AsyncIterator, Coroutine
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from aiohttp import web

from jobtrail.cli.context import (
    Settings,
    allow_origin_option,
    concurrency_option,
    default_actor,
    lease_option,
    pass_settings,
    provider_module_option,
    worker_id_option,
)
from jobtrail.cli.notifying import notify_option, notifying
from jobtrail.core.durations import parse_duration
from jobtrail.core.redact import Redactor
from jobtrail.dashboard.access import Access, agents_from_env, operators_from_env
from jobtrail.dashboard.metrics import Metrics
from jobtrail.dashboard.otel import otel_metrics
from jobtrail.dashboard.web import Dashboard
from jobtrail.errors import InvalidInput, JobtrailError, ProviderConfigError
from jobtrail.ledger import shown_url, url_passwords
from jobtrail.providers.file.config import load_provider_file
from jobtrail.services.census_rounds import census_rounds
from jobtrail.services.logs import install_json_logging
from jobtrail.services.notify_setup import NotifySetup, notify_setup, secret_values
from jobtrail.services.pack_rounds import pack_rounds
from jobtrail.services.runtime import Runtime, runtime, settle_heap
from jobtrail.webhooks.routes import MAX_EVENT_BYTES, WebhookReceiver, providers_folder
from jobtrail.worker.loop import WorkerStats

if TYPE_CHECKING:  # imported where used: the MCP SDK costs start-up time
    from jobtrail.agent.http import McpHttp

log = logging.getLogger("jobtrail.serve")


def secrets_redactor(folder: Path, db: str = "") -> Redactor:
    """A redactor holding every secret the provider files in `folder` name, the audit key,
    the dashboard's operator tokens and the ledger URL's password: read once, at start."""
    values = [os.environ.get("JOBTRAIL_AUDIT_KEY", ""), *url_passwords(db)]
    values.extend(secret_values())  # a notifier's signing key, wherever it is kept
    for variable in ("JOBTRAIL_OPERATOR_TOKENS", "JOBTRAIL_VIEWER_TOKENS", "JOBTRAIL_AGENT_TOKENS"):
        pairs = os.environ.get(variable, "").split(",")
        values.extend(pair.partition(":")[2].strip() for pair in pairs)
    for file in sorted(folder.glob("*.toml")) if folder.is_dir() else ():
        try:
            values.extend(load_provider_file(file).secret_values())
        except ProviderConfigError:
            continue
    return Redactor().extended(values=values)


class Health:
    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.worker: asyncio.Task[WorkerStats] | None = None

    async def handle(self, request: web.Request) -> web.Response:
        alive = self.worker is not None and not self.worker.done()
        document: dict[str, Any] = {"ok": alive, "worker_id": self.rt.worker.worker_id}
        try:
            counts = await self.rt.ledger.count_by_state()
        except JobtrailError as exc:
            document |= {"ok": False, "error": str(exc)}
        else:
            document["states"] = {state.value: n for state, n in sorted(counts.items())}
        return web.json_response(document, status=200 if document["ok"] else 503)


_host_option = click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to listen on."
)
_port_option = click.option(
    "--port",
    default=8080,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port to listen on (0: any free port, logged at start).",
)


@click.command()
@_host_option
@_port_option
@concurrency_option
@worker_id_option
@lease_option
@provider_module_option
@notify_option
@click.option(
    "--metrics-listen",
    metavar="HOST:PORT",
    help="Also serve GET /metrics, unguarded, on this address (on serve's own address it "
    "needs an operator's bearer token; see `jobtrail docs dashboard`).",
)
@allow_origin_option
@click.option(
    "--census",
    "census",
    multiple=True,
    metavar="PROVIDER",
    help="Take a census of PROVIDER (a provider file's name) at start and every "
    "--census-every, logged and recorded; off unless named. Repeatable. `jobtrail docs census`.",
)
@click.option("--census-every", default="24h", show_default=True, metavar="DURATION")
@click.option("--census-since", default="7d", show_default=True, metavar="DURATION")
@click.option(
    "--pack-after",
    metavar="DURATION",
    help="Pack operations finished for longer than this (as `prune --pack-after`), at start "
    "and every --pack-every, as JOBTRAIL_ACTOR (else cli:$USER); off unless given. Needs the "
    "`pack` extra.",
)
@click.option("--pack-every", default="1h", show_default=True, metavar="DURATION")
@pass_settings
def serve(
    settings: Settings,
    host: str,
    port: int,
    concurrency: int,
    worker_id: str | None,
    lease: str,
    provider_modules: tuple[str, ...],
    notify: tuple[str, ...],
    metrics_listen: str | None,
    origins: tuple[str, ...],
    census: tuple[str, ...],
    census_every: str,
    census_since: str,
    pack_after: str | None,
    pack_every: str,
) -> None:
    """Run the worker, the webhook receiver (POST /webhooks/PROVIDER, GET /healthz), the
    dashboard (GET /, for operators named in JOBTRAIL_OPERATOR_TOKENS) and the MCP tools over
    Streamable HTTP (/mcp, for agents named in JOBTRAIL_AGENT_TOKENS) in one process. Logs
    are JSON lines on stderr. SIGINT/SIGTERM stop it gracefully: no new requests, in-flight
    steps finish."""
    folder = providers_folder()
    install_json_logging(secrets_redactor(folder, settings.db))
    try:
        access = Access(operators_from_env())
        rounds = Rounds(census, parse_duration(census_every), parse_duration(census_since))
        packs = None
        if pack_after is not None:
            from jobtrail.ledger.packing import require

            require()  # without the extra, say so at start
            packs = (parse_duration(pack_after), parse_duration(pack_every))
        notices = notify_setup(notify)  # a mistake in it stops the start, before anything opens
        asyncio.run(
            _serve(
                settings,
                folder,
                host,
                port,
                concurrency,
                worker_id,
                access,
                provider_modules=provider_modules,
                lease_for=parse_duration(lease),
                notify=notices,
                metrics_listen=metrics_listen,
                origins=origins,
                rounds=rounds,
                packs=packs,
            )
        )
    except (JobtrailError, OSError) as exc:
        log.error("serve stopped: %s", exc)
        raise SystemExit(1) from None


async def _serve(
    settings: Settings,
    folder: Path,
    host: str,
    port: int,
    concurrency: int,
    worker_id: str | None,
    access: Access,
    *,
    with_worker: bool = True,
    provider_modules: tuple[str, ...] = (),
    lease_for: timedelta = timedelta(seconds=60),
    notify: NotifySetup | None = None,
    metrics_listen: str | None = None,
    origins: tuple[str, ...] = (),
    rounds: Rounds | None = None,
    packs: tuple[timedelta, timedelta] | None = None,
) -> None:
    """`with_worker` False: the dashboard alone, without the worker and webhook receiver."""
    specs = []
    if rounds is not None:
        from jobtrail.providers.code.plugins import load_plugins
        from jobtrail.providers.resolve import resolve_named

        plugins = load_plugins(provider_modules)  # a census of a code provider needs it
        specs = [resolve_named(name, plugins) for name in rounds.providers]
    stop = asyncio.Event()
    stack = contextlib.AsyncExitStack()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with runtime(
        settings.db,
        settings.data_dir,
        audit_key=settings.audit_key,
        worker_id=worker_id,
        concurrency=concurrency,
        results=settings.results,
        create=with_worker,
        provider_modules=provider_modules,
        lease_for=lease_for,
    ) as rt:
        health = Health(rt)
        app = web.Application(client_max_size=MAX_EVENT_BYTES)
        if with_worker:
            WebhookReceiver(rt.ledger, folder, on_recorded=rt.worker.wake).add_routes(app)
            app.router.add_get("/healthz", health.handle)
        Dashboard(rt.ledger, rt.results, rt.providers, access).add_routes(app)
        Metrics(rt.ledger, access).add_routes(app)
        mcp = _mcp_endpoint(rt, settings, host, origins) if with_worker else None
        if mcp is not None:
            mcp.add_routes(app)
        server = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=10)
        await server.setup()
        worker = None
        try:
            await stack.enter_async_context(mcp.running() if mcp else contextlib.nullcontext())
            if with_worker and notify is not None:
                await stack.enter_async_context(notifying(rt.ledger, notify))
            await web.TCPSite(server, host, port).start()
            if metrics_listen:
                await stack.enter_async_context(metrics_site(rt, metrics_listen))
            await stack.enter_async_context(otel_metrics(rt.ledger))  # with an SDK only
            bound_host, bound_port = server.addresses[0][:2]
            settle_heap()
            running: list[asyncio.Task[Any]] = [asyncio.create_task(stop.wait())]
            if with_worker:
                health.worker = worker = asyncio.create_task(rt.worker.run())
                running.append(worker)
            for scheduled in _scheduled(rt, specs, rounds, packs if with_worker else None, stop):
                stack.push_async_callback(_cancelled, asyncio.create_task(scheduled))
            log.info(
                "serving on http://%s:%d",
                bound_host,
                bound_port,
                extra={
                    "worker_id": rt.worker.worker_id if with_worker else None,
                    "db": shown_url(settings.db),
                    "port": bound_port,
                },
            )
            await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            running[0].cancel()
            log.info("stopping: no new requests; in-flight steps finish")
        finally:
            await server.cleanup()  # stop listening, let requests in flight finish
            await stack.aclose()
        if worker is None:
            return
        rt.worker.stop.set()
        stats = await worker  # drains: in-flight calls finish, or stay recorded as sent
    log.info(
        "stopped",
        extra={"claimed": stats.claimed, "finished": stats.finished, "lost": stats.lost},
    )


@contextlib.asynccontextmanager
async def metrics_site(rt: Runtime, listen: str) -> AsyncIterator[None]:
    """GET /metrics alone, unguarded, on `listen` (HOST:PORT)."""
    host, _, port = listen.rpartition(":")
    if not host or not port.isdigit():
        raise InvalidInput(f"--metrics-listen: {listen!r} is not HOST:PORT")
    app = web.Application()
    Metrics(rt.ledger, None).add_routes(app)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    await web.TCPSite(runner, host, int(port)).start()
    bound = runner.addresses[0][:2]
    log.info("metrics on http://%s:%d/metrics", *bound, extra={"metrics_port": bound[1]})
    try:
        yield
    finally:
        await runner.cleanup()


@dataclass(frozen=True)
class Rounds:
    """`serve`'s scheduled census: which providers, how often, how far back."""

    providers: tuple[str, ...]
    every: timedelta
    since: timedelta


def _scheduled(
    rt: Runtime,
    specs: list[Any],
    rounds: Rounds | None,
    packs: tuple[timedelta, timedelta] | None,
    stop: asyncio.Event,
) -> list[Coroutine[Any, Any, None]]:
    """The rounds `serve` runs beside its worker: the census, the packing."""
    found = []
    if specs and rounds is not None:
        found.append(
            census_rounds(
                rt.ledger, rt.providers, specs, every=rounds.every, since=rounds.since, stop=stop
            )
        )
    if packs is not None:
        actor = default_actor()  # the person who asked for it: see services/pack_rounds.py
        found.append(pack_rounds(rt.ledger, actor=actor, after=packs[0], every=packs[1], stop=stop))
    return found


async def _cancelled(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def _mcp_endpoint(
    rt: Runtime, settings: Settings, host: str, origins: tuple[str, ...]
) -> McpHttp | None:
    """/mcp for the agents of JOBTRAIL_AGENT_TOKENS / JOBTRAIL_AGENT_FILE; the MCP SDK is
    imported here, only by `serve` (None, with a warning, when it is not installed)."""
    try:
        from jobtrail.agent.http import McpHttp
        from jobtrail.agent.identity import Identity
        from jobtrail.agent.server import agent_tools, build_server
        from jobtrail.agent.subscriptions import ResourceUpdates
        from jobtrail.agent.watch import watching
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in ("mcp", "mcp_types", "pydantic"):
            raise
        log.warning("no /mcp: the MCP SDK is not installed (pip install 'jobtrail[mcp]')")
        return None
    agents = agents_from_env()
    if not agents:
        log.warning("/mcp refuses every call: no JOBTRAIL_AGENT_TOKENS or JOBTRAIL_AGENT_FILE")
    tools = agent_tools(rt, run_worker=True, data_dir=settings.data_dir)
    bus = ResourceUpdates()  # resource updates, as `jobtrail mcp`: agent/watch.py
    server = build_server(tools, Identity(None), bus=bus)
    endpoint = McpHttp(server, agents, host=host, origins=origins)
    endpoint.updates = lambda: watching(rt.ledger, bus)
    return endpoint


@click.command()
@_host_option
@_port_option
@pass_settings
def dashboard(settings: Settings, host: str, port: int) -> None:
    """Serve the operators' dashboard alone (no worker): needs attention, operations, one
    operation's story, and guarded actions. Operators and their tokens come from
    JOBTRAIL_OPERATOR_TOKENS (name:token,...), JOBTRAIL_VIEWER_TOKENS (read-only) or
    JOBTRAIL_OPERATOR_FILE; see `jobtrail docs dashboard`."""
    install_json_logging(secrets_redactor(providers_folder(), settings.db))
    try:
        access = Access(operators_from_env())
        asyncio.run(
            _serve(settings, providers_folder(), host, port, 1, None, access, with_worker=False)
        )
    except (JobtrailError, OSError) as exc:
        log.error("dashboard stopped: %s", exc)
        raise SystemExit(1) from None


COMMANDS = [serve, dashboard]
