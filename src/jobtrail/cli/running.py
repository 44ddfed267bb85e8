"""Commands that move operations: worker, run, demo."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from datetime import datetime

import click
from rich.console import Console
from rich.live import Live
from rich.table import Table

from jobtrail.cli.context import (
    Settings,
    cell,
    concurrency_option,
    default_actor,
    emit_json,
    json_option,
    pass_settings,
    run_async,
    say,
    worker_id_option,
)
from jobtrail.core.durations import parse_duration
from jobtrail.core.model import Operation
from jobtrail.core.states import State
from jobtrail.runtime import Runtime, runtime
from jobtrail.store.urls import shown_url
from jobtrail.views import iso, operation_json, waiting_for


def _stop_on_signals(rt: Runtime) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, rt.worker.stop.set)


@click.command()
@concurrency_option
@click.option(
    "--until-idle",
    is_flag=True,
    help="Exit once no operation has anything left to do (all ended or waiting for a human).",
)
@worker_id_option
@click.option(
    "--lease",
    default="60s",
    show_default=True,
    metavar="DURATION",
    help="How long a claim holds an operation before others may take it over.",
)
@pass_settings
@run_async
async def worker(
    settings: Settings, concurrency: int, until_idle: bool, worker_id: str | None, lease: str
) -> None:
    """Claim due operations and carry them forward until stopped (SIGINT/SIGTERM stop it
    gracefully: in-flight calls finish, or are left recorded as sent)."""
    async with runtime(
        settings.db,
        settings.data_dir,
        audit_key=settings.audit_key,
        worker_id=worker_id,
        concurrency=concurrency,
        lease_for=parse_duration(lease),
        results=settings.results,
    ) as rt:
        _stop_on_signals(rt)
        click.echo(
            f"{rt.runner.actor} working on {shown_url(settings.db)} (concurrency {concurrency})",
            err=True,
        )
        stats = await rt.worker.run(until_idle=until_idle)
    click.echo(
        f"stopped: {stats.claimed} claims, {stats.finished} operations ended, "
        f"{stats.lost} lost to other workers",
        err=True,
    )


def _panel(op: Operation, now: datetime) -> Table:
    table = Table(show_header=False, box=None)
    table.add_column(style="bold")
    table.add_row("operation", cell(op.operation_id))
    table.add_row("state", cell(op.state.value))
    table.add_row("remote job", cell(op.remote_job_id or "-"))
    table.add_row("remote state", cell(op.remote_state or "-"))
    table.add_row("progress", cell(op.progress if op.progress is not None else "-"))
    table.add_row("next", cell(waiting_for(op, now)))
    return table


@click.command()
@click.argument("operation_id")
@json_option
@pass_settings
@run_async
async def run(settings: Settings, operation_id: str, as_json: bool) -> None:
    """Drive one operation in the foreground until automation ends for it, showing its
    state, remote state, progress and next poll."""
    actor = f"run:{default_actor()}"
    async with runtime(
        settings.db,
        settings.data_dir,
        audit_key=settings.audit_key,
        worker_id=actor,
        concurrency=1,
        create=False,  # the operation must already be recorded, so must its ledger
        results=settings.results,
    ) as rt:
        _stop_on_signals(rt)
        op = await rt.ledger.get(operation_id)
        with Live(_panel(op, rt.clock.now()), transient=as_json, auto_refresh=False) as live:
            while not op.state.ends_automation and not rt.worker.stop.is_set():
                claims = await rt.ledger.claim(actor, 1, rt.runner.lease_for, only=operation_id)
                if claims:
                    await rt.runner.drive(claims[0].operation)
                op = await rt.ledger.get(operation_id)
                live.update(_panel(op, rt.clock.now()), refresh=True)
                due = op.next_poll_at
                delay = 1.0 if due is None else (due - rt.clock.now()).total_seconds()
                if not op.state.ends_automation and delay > 0:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(rt.worker.stop.wait(), timeout=min(delay, 1.0))
        if as_json:
            emit_json(operation_json(op, rt.clock.now()))
        else:
            say(
                f"{op.operation_id} {op.state.value} (remote job "
                f"{op.remote_job_id or 'none'}) at {iso(rt.clock.now())}"
            )


COMMANDS = [worker, run]


@click.command()
@pass_settings
@run_async
async def demo(settings: Settings) -> None:
    """Start the simulator on a free loopback port, submit a handful of operations that
    show every failure jobtrail handles, drive them to the end, and print what happened.

    Uses a fresh ledger in a temporary folder unless --db is given."""
    import tempfile
    from pathlib import Path

    from jobtrail.demo import run_demo

    explicit = click.get_current_context().find_root().params.get("db")
    folder = Path(tempfile.mkdtemp(prefix="jobtrail-demo-"))
    db = explicit or str(folder / "demo.db")
    data = settings.data_dir if explicit else folder / "jobtrail-data"
    console = Console(highlight=False, width=max(Console().width, 160))
    with console.status("running the demo…") as status:

        def progress(counts: dict[State, int]) -> None:
            status.update(" ".join(f"{state}={n}" for state, n in sorted(counts.items())))

        rows, verdict = await run_demo(db, data, progress, results=settings.results)
    table = Table(
        "scenario",
        "operation",
        "state",
        "remote job",
        "attempts",
        "status calls",
        "outcome",
        title="jobtrail demo",
    )
    for row in rows:
        table.add_row(
            row.scenario,
            row.op.operation_id,
            row.op.state.value,
            cell(row.op.remote_job_id or "-"),
            str(row.attempts),
            str(row.status_calls),
            cell(row.outcome),
        )
    console.print(table)
    console.print(verdict.message())
    shown = shown_url(db)
    console.print(
        f"\nledger: {shown}\nexplore: jobtrail --db {shown} explain {rows[1].op.operation_id}"
    )
    if not verdict.ok:
        raise SystemExit(1)


COMMANDS.append(demo)
