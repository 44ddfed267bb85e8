"""`jobtrail mcp`: the agent tools over MCP on stdin/stdout (official `mcp` SDK), with an
in-process worker unless told otherwise. A thin surface: parse, call `AgentTools`, return."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict
from datetime import timedelta
from importlib.metadata import version
from pathlib import Path
from typing import Annotated, Any, TypeVar

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import (
    ResourceError,
    ResourceNotFoundError,
    ToolError,
    UnexpectedToolError,
)
from mcp.types import ToolAnnotations
from pydantic import Field, ValidationError

from jobtrail.agent.identity import Identity
from jobtrail.agent.shapes import (
    CancelRecorded,
    Explanation,
    JobList,
    JobView,
    ResultView,
    Submitted,
    WaitedJob,
)
from jobtrail.agent.subscriptions import ResourceUpdates
from jobtrail.agent.tasks import DEFAULT_TTL, LedgerTasks, listen_guard
from jobtrail.agent.tools import WAIT_CAP_SECONDS, AgentTools
from jobtrail.agent.waiting import WAIT_DEFAULT_SECONDS
from jobtrail.agent.watch import OPERATION_URI, watch_operations
from jobtrail.core.states import State
from jobtrail.errors import JobtrailError, NotFound
from jobtrail.providers.resolve import resolve_provider
from jobtrail.services.runtime import Runtime, runtime

T = TypeVar("T")
log = logging.getLogger("jobtrail.agent")
# stdio clients wait about 2 s after closing stdin before they terminate the server; an
# abandoned call keeps its recorded intent, so the next owner settles it.
SHUTDOWN_GRACE = 1.5

INSTRUCTIONS = """\
jobtrail runs long jobs on third-party APIs for you and keeps a durable record of each one.
submit_job records the job before anything is sent (always pass a key you can repeat: the
same key and request return the same operation, never a second job). Follow it with
wait_job / get_job, read the outcome with get_result, and ask explain_job for the story.
cancel_job only records the intent to cancel; the job stops when the provider confirms it.
Credentials stay in this server's environment and are never shown."""

OperationId = Annotated[str, Field(description="The operation id returned by submit_job.")]
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)


class _Server(MCPServer[Any]):
    """The SDK's server, with arguments that do not fit a tool's schema answered in one
    sentence naming them (the SDK's own answer is pydantic's multi-line report)."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            raise ToolError(_arguments_sentence(name, cause)) from cause


def _arguments_sentence(tool: str, error: ValidationError) -> str:
    missing, wrong = [], []
    for problem in error.errors():
        where = ".".join(str(part) for part in problem["loc"]) or "the arguments"
        if problem["type"] == "missing":
            missing.append(where)
        else:
            wrong.append(f"{where} ({problem['msg'].lower()})")
    parts = []
    if missing:
        parts.append(
            f"is missing the argument{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
        )
    if wrong:
        parts.append(f"got an unusable {', '.join(wrong)}")
    return f"{tool} {' and '.join(parts)}; its input schema lists what it takes."


def build_server(
    tools: AgentTools,
    identity: Identity,
    *,
    task_ttl: timedelta | None = DEFAULT_TTL,
    bus: ResourceUpdates | None = None,
) -> MCPServer[Any]:
    """The MCP server exposing `tools`, with the Tasks extension served from the ledger
    (agent/tasks.py; `task_ttl` is each task's time to live, None: unlimited). Every
    request acts as `identity` says (the server's configuration or the transport's
    authentication, never the client's own name), always as an agent (`agent:NAME`): the
    action policy treats whoever talks MCP as an agent, never as a person. Resource updates
    published on `bus` reach both protocol eras (agent/subscriptions.py)."""
    bus = bus or ResourceUpdates()
    server: MCPServer[Any] = _Server(
        "jobtrail",
        version=version("jobtrail"),
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        extensions=[LedgerTasks(tools, identity, ttl=task_ttl)],
        middleware=[listen_guard],
        subscriptions=bus,
    )

    def who(ctx: Context[Any, Any]) -> str:
        return identity.of(ctx.request_context.request)

    add_operation_resource(server, tools, who)
    bus.serve(server)

    @server.tool(
        description="Record a job for a provider (by name) and return its operation id. "
        "Nothing is sent before the record is durable; a worker sends it. The same key with "
        "the same request returns the existing operation; a changed request under a used key "
        "is refused (use a new key, and cancel the old operation if it should not run).",
        annotations=ToolAnnotations(
            destructive_hint=False, idempotent_hint=True, open_world_hint=True
        ),
    )
    async def submit_job(
        provider: Annotated[
            str, Field(description="Provider name, e.g. 'reports' (configured on the server).")
        ],
        request: Annotated[
            dict[str, Any], Field(description="The JSON body sent to the provider's create.")
        ],
        key: Annotated[
            str,
            Field(description="Your operation key (1-200 chars); reuse it when retrying."),
        ],
        reason: Annotated[str, Field(description="Why this job is needed (recorded).")],
        ctx: Context[Any, Any],
        path: Annotated[
            dict[str, str] | None,
            Field(
                description="Values for the placeholders of the provider's create path, e.g. "
                '{"group": "rg1", "name": "w1"}: one URL path segment each.'
            ),
        ] = None,
    ) -> Submitted:
        return await _guard(
            tools.submit_job(provider, request, key=key, reason=reason, actor=who(ctx), path=path)
        )

    @server.tool(
        description="An operation's state, the provider's last observed state, progress, "
        "next poll time, what jobtrail does next (`next_step`), and its last transitions.",
        annotations=READ_ONLY,
    )
    async def get_job(operation_id: OperationId, ctx: Context[Any, Any]) -> JobView:
        return await _guard(tools.get_job(operation_id, actor=who(ctx)))

    @server.tool(
        description=f"Wait until the operation's state changes or its automation ends, at "
        f"most timeout_seconds (default {WAIT_DEFAULT_SECONDS:.0f} s, below common clients' "
        f"call timeouts; capped at {WAIT_CAP_SECONDS:.0f} s). Returns what get_job returns "
        "plus `changed`, `call_again` and `instruction`: while `call_again` is true, call "
        "wait_job again. Sends progress notifications while it waits when asked to.",
        annotations=READ_ONLY,
    )
    async def wait_job(
        operation_id: OperationId,
        ctx: Context[Any, Any],
        timeout_seconds: Annotated[
            float,
            Field(
                description=f"At most this long (default {WAIT_DEFAULT_SECONDS:.0f}, capped "
                f"at {WAIT_CAP_SECONDS:.0f}); keep it below your client's call timeout."
            ),
        ] = WAIT_DEFAULT_SECONDS,
    ) -> WaitedJob:
        return await _guard(
            tools.wait_job(operation_id, timeout_seconds, ctx.report_progress, actor=who(ctx))
        )

    @server.tool(
        description="Record the intent to stop an operation. This does not stop anything by "
        "itself: the worker sends the provider's cancel once and keeps observing, and the job "
        "may still succeed or fail first. Returns state cancel_requested (or the recorded "
        "intent while the create is pending); follow the outcome with wait_job.",
        annotations=ToolAnnotations(
            destructive_hint=True, idempotent_hint=True, open_world_hint=True
        ),
    )
    async def cancel_job(
        operation_id: OperationId,
        reason: Annotated[str, Field(description="Why the job should stop (recorded).")],
        ctx: Context[Any, Any],
    ) -> CancelRecorded:
        return await _guard(tools.cancel_job(operation_id, reason=reason, actor=who(ctx)))

    @server.tool(
        description="The collected result: validation outcome, per-item counts, and the "
        "content when it is at most 64 KB (else its stored path and a preview).",
        annotations=READ_ONLY,
    )
    async def get_result(operation_id: OperationId, ctx: Context[Any, Any]) -> ResultView:
        return await _guard(tools.get_result(operation_id, actor=who(ctx)))

    @server.tool(
        description="Operations in this ledger that you may read (by default, those you "
        "submitted), newest first.",
        annotations=READ_ONLY,
    )
    async def list_jobs(
        ctx: Context[Any, Any],
        state: Annotated[State | None, Field(description="Only operations in this state.")] = None,
        limit: Annotated[int, Field(ge=1, le=200, description="At most this many.")] = 20,
    ) -> JobList:
        return await _guard(tools.list_jobs(state.value if state else None, limit, actor=who(ctx)))

    @server.tool(
        description="An operation's story in words: what was asked, which remote job, what "
        "was observed, what jobtrail did and will do next.",
        annotations=READ_ONLY,
    )
    async def explain_job(operation_id: OperationId, ctx: Context[Any, Any]) -> Explanation:
        return await _guard(tools.explain_job(operation_id, actor=who(ctx)))

    return server


def add_operation_resource(
    server: MCPServer[Any], tools: AgentTools, who: Callable[[Context[Any, Any]], str]
) -> None:
    """`jobtrail://operations/{id}`: each operation, readable as a resource, by whoever may
    read it as get_job (the read policy)."""

    @server.resource(
        OPERATION_URI,
        name="operation",
        mime_type="application/json",
        description="One operation as get_job shows it, by its operation id: the same handle "
        "as the tools' operation_id and a task's operation, unchanged by a server restart.",
    )
    async def operation(operation_id: str, ctx: Context[Any, Any]) -> str:
        try:
            view = await tools.get_job(operation_id, actor=who(ctx))
        except NotFound as exc:
            raise ResourceNotFoundError(str(exc)) from None
        except JobtrailError as exc:
            raise ResourceError(str(exc)) from None
        return json.dumps(asdict(view), ensure_ascii=False)


async def _guard(call: Awaitable[T]) -> T:
    """Errors become one sentence for the agent; never a traceback or a protocol error."""
    try:
        return await call
    except JobtrailError as exc:
        raise ToolError(str(exc)) from None
    except Exception as exc:
        log.exception("an agent tool failed")
        raise ToolError(
            f"an unexpected {type(exc).__name__} inside jobtrail; the server's log has the "
            "details, and retrying is safe (the same key never creates a second operation)"
        ) from None


def agent_tools(rt: Runtime, *, run_worker: bool, data_dir: Path) -> AgentTools:
    """The tools over `rt`'s ledger; `run_worker` says whether this process drives them."""
    plugins = rt.providers.plugins
    return AgentTools(
        rt.ledger,
        worker_running=run_worker,
        wake=rt.worker.wake,
        results=rt.results,
        data_dir=data_dir,
        find=lambda name: resolve_provider(name, plugins),
    )


async def serve(
    db: str,
    data_dir: Path,
    *,
    audit_key: bytes | None,
    actor: str | None,
    run_worker: bool,
    concurrency: int,
    results: str | None = None,
    provider_modules: Sequence[str] = (),
    lease_for: timedelta = timedelta(seconds=60),
    task_ttl: timedelta | None = DEFAULT_TTL,
    http: tuple[str, int] | None = None,
    origins: Sequence[str] = (),
) -> None:
    """Serve until stdin closes, then stop the worker gracefully and close the ledger.
    Every request acts as `actor` (None: JOBTRAIL_ACTOR, else the login running this).
    With `http` (host, port), serve Streamable HTTP at /mcp instead, for the agents of
    JOBTRAIL_AGENT_TOKENS / JOBTRAIL_AGENT_FILE (agent/http.py), until SIGINT/SIGTERM.

    On SIGINT/SIGTERM the same shutdown runs, and then the signal is raised again with its
    default action: the SDK reads stdin in a thread that no cancellation can interrupt, so
    dying by the signal is the only clean end while the client still holds stdin open."""
    signals: list[signal.Signals] = []
    async with runtime(
        db,
        data_dir,
        audit_key=audit_key,
        concurrency=concurrency,
        results=results,
        provider_modules=provider_modules,
        lease_for=lease_for,
    ) as rt:
        rt.worker.grace = SHUTDOWN_GRACE
        tools = agent_tools(rt, run_worker=run_worker, data_dir=data_dir)
        identity = Identity(None) if http else Identity.configured(actor)
        bus = ResourceUpdates()  # resource updates: agent/watch.py, agent/subscriptions.py
        server = build_server(tools, identity, task_ttl=task_ttl, bus=bus)
        unwatched = asyncio.Event()
        watching = asyncio.create_task(watch_operations(rt.ledger, bus, unwatched))
        worker = asyncio.create_task(rt.worker.run()) if run_worker else None
        if worker is not None:
            worker.add_done_callback(report_worker_end)
        if http is not None:
            await _serve_http(server, http, worker, origins)
            unwatched.set()
            await watching
            rt.worker.stop.set()
            if worker is not None:
                await asyncio.wait([worker])
            return
        serving = asyncio.create_task(server.run_stdio_async())
        stopped = asyncio.Event()
        loop = asyncio.get_running_loop()

        def on_signal(sig: signal.Signals) -> None:
            signals.append(sig)
            stopped.set()

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, on_signal, sig)
        stopping = asyncio.create_task(stopped.wait())
        try:
            await asyncio.wait([serving, stopping], return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            unwatched.set()
            await watching
            rt.worker.stop.set()
            if worker is not None:
                await asyncio.wait([worker])
    if signals:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), signals[0])
    error = serving.exception()
    if error is not None:
        raise error


async def _serve_http(
    server: MCPServer[Any],
    where: tuple[str, int],
    worker: asyncio.Task[Any] | None,
    origins: Sequence[str],
) -> None:
    from jobtrail.agent.http import serve_http
    from jobtrail.dashboard.access import agents_from_env

    agents = agents_from_env()
    if not agents:
        log.warning(
            "no agent tokens (JOBTRAIL_AGENT_TOKENS, JOBTRAIL_AGENT_FILE): /mcp refuses all"
        )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)

    def bound(host: str, port: int) -> None:
        print(f"jobtrail mcp: serving http://{host}:{port}/mcp", file=sys.stderr, flush=True)

    await serve_http(
        server,
        agents,
        host=where[0],
        port=where[1],
        worker=worker,
        stop=stop,
        on_bound=bound,
        origins=origins,
    )


def report_worker_end(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error(
            "the in-process worker stopped (%s); operations wait for another worker",
            task.exception(),
        )
