"""`jobtrail mcp`: serve the agent tools over MCP. The SDK is imported only here, when the
command runs, so every other command starts without it."""

from __future__ import annotations

import click

from jobtrail.cli.context import (
    Settings,
    concurrency_option,
    fail,
    pass_settings,
    provider_module_option,
    run_async,
)


@click.command()
@click.option(
    "--actor",
    help="Who is recorded as asking, for every operation and cancel, always as an agent "
    "(agent:NAME; the policy's agent rules apply). [default: agent:<the MCP client's name>]",
)
@click.option(
    "--no-worker",
    is_flag=True,
    help="Only record and read; leave sending and observing to a separate `jobtrail worker`.",
)
@concurrency_option
@provider_module_option
@pass_settings
@run_async
async def mcp(
    settings: Settings,
    actor: str | None,
    no_worker: bool,
    concurrency: int,
    provider_modules: tuple[str, ...],
) -> None:
    """Serve jobtrail's agent tools over MCP on stdin/stdout (submit_job, get_job, wait_job,
    cancel_job, get_result, list_jobs, explain_job), running a worker in the same process
    unless --no-worker. Credentials stay in this process's environment."""
    if actor is not None and (not actor.strip() or not actor.isprintable()):
        fail("--actor must be a non-empty printable name")
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
    )


COMMANDS = [mcp]
