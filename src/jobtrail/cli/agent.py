"""`jobtrail mcp`: serve the agent tools over MCP. The SDK is imported only here, when the
command runs, so every other command starts without it."""

from __future__ import annotations

from datetime import timedelta

import click

from jobtrail.cli.context import (
    Settings,
    allow_origin_option,
    concurrency_option,
    fail,
    lease_option,
    pass_settings,
    provider_module_option,
    run_async,
)
from jobtrail.core.durations import parse_duration
from jobtrail.errors import JobtrailError


@click.command()
@click.option(
    "--actor",
    help="Who is recorded as asking, for every operation and cancel over stdio, always as an "
    "agent (agent:NAME; the policy's agent rules apply). Never the MCP client's own name. "
    "Over --http each agent's token names it instead. [default: JOBTRAIL_ACTOR, else "
    "agent:<your login>]",
)
@click.option(
    "--no-worker",
    is_flag=True,
    help="Only record and read; leave sending and observing to a separate `jobtrail worker`.",
)
@click.option(
    "--http",
    metavar="HOST:PORT",
    help="Serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio, for the agents of "
    "JOBTRAIL_AGENT_TOKENS (name:token,...) or JOBTRAIL_AGENT_FILE (PORT 0: any free port).",
)
@click.option(
    "--task-ttl",
    default="7d",
    show_default=True,
    metavar="DURATION",
    help="How long a task handle (MCP Tasks) stays usable; `jobtrail prune` removes it after.",
)
@lease_option
@allow_origin_option
@concurrency_option
@provider_module_option
@pass_settings
@run_async
async def mcp(
    settings: Settings,
    actor: str | None,
    no_worker: bool,
    http: str | None,
    task_ttl: str,
    lease: str,
    origins: tuple[str, ...],
    concurrency: int,
    provider_modules: tuple[str, ...],
) -> None:
    """Serve jobtrail's agent tools over MCP on stdin/stdout, or over HTTP (submit_job,
    get_job, wait_job, cancel_job, get_result, list_jobs, explain_job, and MCP Tasks),
    running a worker in the same process unless --no-worker. Credentials stay in this
    process's environment."""
    if actor is not None and (not actor.strip() or not actor.isprintable()):
        fail("--actor must be a non-empty printable name")
    try:
        ttl, lease_for = _duration(task_ttl, "--task-ttl"), _duration(lease, "--lease")
    except JobtrailError as exc:
        fail(str(exc))
    where = _address(http) if http is not None else None
    try:
        from jobtrail.agent.server import serve
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in ("mcp", "mcp_types", "pydantic"):
            raise
        fail("`jobtrail mcp` needs the MCP SDK: pip install 'jobtrail[mcp]'")
    await serve(
        settings.db,
        settings.data_dir,
        audit_key=settings.audit_key,
        actor=actor,
        run_worker=not no_worker,
        concurrency=concurrency,
        results=settings.results,
        provider_modules=provider_modules,
        lease_for=lease_for,
        task_ttl=ttl,
        http=where,
        origins=origins,
    )


def _duration(text: str, option: str) -> timedelta:
    span = parse_duration(text)
    if span <= timedelta(0):
        raise JobtrailError(f"{option} must be a positive duration, like 30s or 7d")
    return span


def _address(text: str) -> tuple[str, int]:
    host, colon, port = text.rpartition(":")
    if not colon or not host or not port.isdigit() or int(port) > 65535:
        fail("--http takes HOST:PORT, like 127.0.0.1:8765 (PORT 0: any free port)")
    return host.strip("[]"), int(port)


COMMANDS = [mcp]
