"""`jobtrail`: the command group and its global options."""

from __future__ import annotations

import os
import sys
import traceback

import click

from jobtrail.cli.context import settings_from


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
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
@click.version_option(package_name="jobtrail")
@click.pass_context
def cli(ctx: click.Context, db: str | None, data_dir: str | None) -> None:
    """jobtrail: run long jobs on third-party APIs without sending them twice, losing a
    result, or claiming a cancellation that never happened.

    Every operation is written down before anything is sent; every call, observation and
    decision is recorded, and `jobtrail explain` tells the story.
    """
    ctx.obj = settings_from(db, data_dir)


def _register() -> None:
    from jobtrail.cli import admin, agent, decisions, ops, retention, running, serving

    for module in (ops, decisions, running, admin, retention, agent, serving):
        for command in module.COMMANDS:
            cli.add_command(command)


_register()


def main() -> None:
    try:
        cli(prog_name="jobtrail")
    except Exception as exc:  # an unexpected bug: one line, the traceback only on request
        if os.environ.get("JOBTRAIL_DEBUG"):
            traceback.print_exc()
        click.echo(
            f"error: unexpected {type(exc).__name__}: {exc} (set JOBTRAIL_DEBUG=1 for details)",
            err=True,
        )
        sys.exit(70)
