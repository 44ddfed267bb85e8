"""`jobtrail`: the command group and its global options (jobtrail.cli.main is the console
script's entry point; it answers `--version` without this module)."""

from __future__ import annotations

import importlib
import os
import sys

import click

from jobtrail._version import VERSION
from jobtrail.cli.context import settings_from

# Which module holds each command, so that `jobtrail X` imports X's module only: the
# whole command set pulls in aiohttp, psycopg, rich and more, about half a second per
# command. A command missing here is still found (every module is then imported).
MODULES = (
    "ops",
    "status",
    "result",
    "decisions",
    "running",
    "admin",
    "agent",
    "serving",
    "ledgerfile",
    "retention",
    "docs",
    "census",
    "notifying",
)
HOME = {
    **dict.fromkeys(("submit", "list", "history", "explain", "cancel"), "ops"),
    "status": "status",
    "result": "result",
    **dict.fromkeys(("escalation", "resolve", "extend"), "decisions"),
    **dict.fromkeys(("worker", "run", "demo"), "running"),
    **dict.fromkeys(("audit", "provider", "simulator"), "admin"),
    "mcp": "agent",
    "serve": "serving",
    "dashboard": "serving",
    "backup": "ledgerfile",
    "prune": "retention",
    "archive": "retention",
    "docs": "docs",
    "census": "census",
    "notify": "notifying",
}


def _commands(module: str) -> dict[str, click.Command]:
    loaded = importlib.import_module(f"jobtrail.cli.{module}")
    return {command.name or "": command for command in loaded.COMMANDS}


class LazyGroup(click.Group):
    """Imports a command's module when the command is asked for, not at start-up."""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        home = HOME.get(cmd_name)
        for module in (home,) if home else MODULES:
            found = _commands(module).get(cmd_name) if module else None
            if found is not None:
                return found
        return None

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({name for module in MODULES for name in _commands(module)})


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--db",
    metavar="PATH|URL",
    help="The ledger: a SQLite file or a postgresql:// URL. "
    "[env JOBTRAIL_DB; default ./jobtrail.db]",
)
@click.option(
    "--data-dir",
    metavar="DIR",
    help="Where fetched results are stored. [env JOBTRAIL_DATA; default jobtrail-data next to "
    "the SQLite file]",
)
@click.option(
    "--results",
    metavar="URL",
    help="Where new results are stored: a directory (the default, --data-dir), db: (the "
    "ledger's database; db:?max_bytes=N caps a result) or s3://BUCKET/PREFIX (endpoint and "
    "credentials from the standard AWS settings). [env JOBTRAIL_RESULTS]",
)
@click.option(
    "--policy",
    metavar="FILE",
    help="The action policy (TOML): which actions people, agents and workers may take, and "
    "([notify]) where notices to people go. "
    "[env JOBTRAIL_POLICY; the default and the format: `jobtrail docs dashboard`]",
)
@click.version_option(VERSION, prog_name="jobtrail")
@click.pass_context
def cli(
    ctx: click.Context,
    db: str | None,
    data_dir: str | None,
    results: str | None,
    policy: str | None,
) -> None:
    """jobtrail: run long jobs on third-party APIs without sending them twice, losing a
    result, or claiming a cancellation that never happened.

    Every operation is written down before anything is sent; every call, observation and
    decision is recorded, and `jobtrail explain` tells the story. `jobtrail docs` lists the
    documentation shipped with it.
    """
    if policy:  # every ledger this process opens, worker and servers included, reads it
        os.environ["JOBTRAIL_POLICY"] = policy
    ctx.obj = settings_from(db, data_dir, results)


def run() -> None:
    try:
        cli(prog_name="jobtrail")
    except Exception as exc:  # an unexpected bug: one line, the traceback only on request
        if os.environ.get("JOBTRAIL_DEBUG"):
            import traceback  # costs 40 ms at start-up; needed only here

            traceback.print_exc()
        click.echo(
            f"error: unexpected {type(exc).__name__}: {exc} (set JOBTRAIL_DEBUG=1 for details)",
            err=True,
        )
        sys.exit(70)


if __name__ == "__main__":
    run()
