"""Commands that move operations: worker, run, demo."""

from __future__ import annotations

import asyncio
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
    fail,
    json_option,
    lease_option,
    pass_settings,
    provider_module_option,
    run_async,
    say,
    worker_id_option,
)
from jobtrail.cli.exits import EXIT_HELP, RunExit, run_exit
from jobtrail.cli.notifying import notify_option, notifying
from jobtrail.cli.stopping import Stopper, log_steps, warn_unset_credentials
from jobtrail.cli.tables import Col, print_rows
from jobtrail.core.durations import parse_duration
from jobtrail.core.leases import lease_alive
from jobtrail.core.model import Operation, ProviderKind
from jobtrail.core.nextstep import next_step
from jobtrail.core.states import State
from jobtrail.core.words import counted, iso, progress_text, relative
from jobtrail.errors import JobtrailError
from jobtrail.ledger import shown_url
from jobtrail.presentation.views import operation_view
from jobtrail.providers.registry import missing_message
from jobtrail.services.notify_setup import notify_setup
from jobtrail.services.runtime import runtime, settle_heap


@click.command()
@concurrency_option
@click.option(
    "--until-idle",
    is_flag=True,
    help="Exit once no operation has anything left to do (all ended or waiting for a human).",
)
@worker_id_option
@lease_option
@click.option(
    "-v", "--verbose", is_flag=True, help="Log each claim, call, outcome and release to stderr."
)
@provider_module_option
@notify_option
@click.option(
    "--processes",
    default=1,
    show_default=True,
    type=click.IntRange(1, 1024),
    help="Worker processes to run under one supervisor (one per core, say); each is a "
    "worker of its own with CONCURRENCY operations. On SQLite they share one write lock.",
)
@pass_settings
def worker(
    settings: Settings,
    concurrency: int,
    until_idle: bool,
    worker_id: str | None,
    lease: str,
    verbose: bool,
    provider_modules: tuple[str, ...],
    notify: tuple[str, ...],
    processes: int,
) -> None:
    """Claim due operations and carry them forward until stopped. Ctrl-C (or SIGTERM) stops
    taking work at once and waits for the steps in flight, naming them; a second Ctrl-C
    abandons them (their calls stay recorded as sent). The stop is recorded in the audit
    log as a graceful stop. With --processes N, a supervisor runs N such workers, forwards
    Ctrl-C and SIGTERM to them, and starts one again that dies (docs/scaling.md)."""
    if processes == 1:
        work = run_async(_work)
        work(settings, concurrency, until_idle, worker_id, lease, verbose, provider_modules, notify)
        return
    from jobtrail.cli.processes import child_env, supervise

    try:  # each worker reads it again; a mistake stops the supervisor before any starts
        notify_setup(notify)
    except JobtrailError as exc:
        fail(str(exc))
    args = ["--concurrency", str(concurrency), "--lease", lease]
    args += ["--until-idle"] * until_idle + ["--verbose"] * verbose
    for module in provider_modules:
        args += ["--provider-module", module]
    for url in notify:
        args += ["--notify", url]
    if not settings.is_postgres:
        click.echo(
            f"supervisor: {processes} worker processes on a SQLite ledger take its one write "
            "lock in turn: the HTTP calls and parsing run in parallel, the writes do not "
            "(PostgreSQL lets them write at once)",
            err=True,
        )
    env = child_env(settings.db, str(settings.data_dir), settings.results)
    raise SystemExit(supervise(args, processes, worker_id, env))


async def _work(
    settings: Settings,
    concurrency: int,
    until_idle: bool,
    worker_id: str | None,
    lease: str,
    verbose: bool,
    provider_modules: tuple[str, ...],
    notify: tuple[str, ...] = (),
) -> None:
    notices = notify_setup(notify)  # a mistake in it stops the start, before anything opens
    if verbose:
        log_steps()
    async with runtime(
        settings.db,
        settings.data_dir,
        audit_key=settings.audit_key,
        worker_id=worker_id,
        concurrency=concurrency,
        lease_for=parse_duration(lease),
        results=settings.results,
        provider_modules=provider_modules,
    ) as rt:
        stopper = Stopper(rt, rt.worker.in_flight, rt.worker.abandon)
        settle_heap()
        code = sorted(rt.providers.plugins)
        click.echo(
            f"{rt.runner.actor} working on {shown_url(settings.db)} (concurrency {concurrency}"
            f"; code providers: {', '.join(code) or 'none'})",
            err=True,
        )
        # An installed code provider that cannot be loaded was logged by the runtime.
        await warn_unset_credentials(rt)
        async with notifying(rt.ledger, notices):
            stats = await rt.worker.run(until_idle=until_idle)
        await stopper.record(claimed=stats.claimed, finished=stats.finished)
    click.echo(
        f"stopped: {counted(stats.claimed, 'claim')}, "
        f"{counted(stats.finished, 'operation')} ended, "
        f"{stats.lost} lost to other workers",
        err=True,
    )


_REFRESH = 1.0  # seconds between looks at the operation while the worker drives it


class _Shown:
    """`run`'s panel: redrawn in place on a terminal (and wiped at the end with --json);
    piped, printed once at the end, whole: no cursor moves, no cut label, ended lines."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        console = Console(highlight=False)
        self.live: Live | None = None
        if console.is_terminal:
            self.live = Live(console=console, transient=quiet, auto_refresh=False)
            self.live.start()

    def update(self, table: Table) -> None:
        if self.live is not None:
            self.live.update(table, refresh=True)

    def stop(self, table: Table) -> None:
        if self.live is not None:
            self.live.update(table, refresh=True)
            self.live.stop()
        elif not self.quiet:  # as wide as COLUMNS: the values fold, the labels stay whole
            Console(highlight=False).print(table)


_LABELS = ("operation", "state", "remote job", "remote state", "progress", "next")


def _panel(op: Operation, now: datetime) -> Table:
    """The operation as `run` shows it: the labels are never cut or wrapped, a long value
    (an ARN) folds onto the next lines instead."""
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold", no_wrap=True, min_width=max(map(len, _LABELS)))
    table.add_column(overflow="fold")
    values = (
        op.operation_id,
        op.state.value,
        op.remote_job_id or "-",
        op.remote_state or "-",
        progress_text(op.progress),
        next_step(op, now),
    )
    for label, value in zip(_LABELS, values, strict=True):
        table.add_row(label, cell(value))
    return table


def _lease_wait(op: Operation, actor: str, now: datetime) -> str:
    """Whose live lease keeps `run` from driving `op` now, and until when, in words. A lease
    in `run`'s own name that this run does not hold was left by an earlier run stopped with
    its step abandoned: it is taken over, and that step settled, once it expires."""
    expires = op.lease_expires_at or now
    until = f" until {iso(expires)} ({relative(expires, now)})"
    if op.lease_owner != actor:
        held = f"{op.lease_owner} (fence {op.fence}) on {op.operation_id}"
        return f"waiting for the lease held by {held}{until}"
    return (
        f"waiting for the lease an earlier `run` left on {op.operation_id} (fence {op.fence})"
        f"{until}: its step was abandoned mid-call; then this run takes the operation over "
        "and settles that call as interrupted"
    )


@click.command(epilog=EXIT_HELP)
@click.argument("operation_id")
@json_option
@provider_module_option
@pass_settings
@run_async
async def run(
    settings: Settings, operation_id: str, as_json: bool, provider_modules: tuple[str, ...]
) -> None:
    """Drive one operation in the foreground until automation ends for it, showing its
    state, remote state, progress and next poll. Exits 0 only when it succeeded, so
    `jobtrail run OP && next-step` is safe. Ctrl-C stops after the step in flight; a
    second Ctrl-C abandons it."""
    actor = f"run:{default_actor()}"
    async with runtime(
        settings.db,
        settings.data_dir,
        audit_key=settings.audit_key,
        worker_id=actor,
        concurrency=1,
        create=False,  # the operation must already be recorded, so must its ledger
        results=settings.results,
        provider_modules=provider_modules,
    ) as rt:
        op = await rt.ledger.get(operation_id)
        operation_id = op.operation_id
        drives = rt.providers.code_names()
        missing = op.provider_kind is ProviderKind.CODE and op.provider not in drives
        if missing and not op.state.ends_automation:
            broken = rt.providers.plugins.broken.get(op.provider)
            why = f" ({broken})" if broken else ""
            fail(missing_message(op) + why, code=RunExit.PROVIDER_MISSING)
        unset = await warn_unset_credentials(rt, only=operation_id)
        if any(not each.code for each in unset):  # its calls would stop before sending
            fail(
                f"{operation_id} cannot be sent: set the variable named above and run it "
                "again (nothing was sent)",
                code=RunExit.PROVIDER_MISSING,
            )
        stopper = Stopper(rt, rt.worker.in_flight, rt.worker.abandon)
        # The worker's own loop drives it (Worker.run(only=...)); this only shows it.
        driving = asyncio.create_task(rt.worker.run(only=operation_id))
        said: tuple[str | None, int] | None = None
        shown = _Shown(as_json)
        shown.update(_panel(op, rt.clock.now()))
        try:
            while True:
                done, _ = await asyncio.wait([driving], timeout=_REFRESH)
                op = await rt.ledger.get(operation_id)
                now = rt.clock.now()
                ours = bool(rt.worker.in_flight())  # our own step holds it meanwhile
                holder = None if ours or not lease_alive(op, now) else (op.lease_owner, op.fence)
                if holder is not None and holder != said:
                    say(_lease_wait(op, rt.runner.actor, now), err=True)
                said = holder
                shown.update(_panel(op, now))
                if done:
                    break
        finally:
            shown.stop(_panel(op, rt.clock.now()))
        await driving  # its errors, if any
        await stopper.record(finished=int(op.state.ends_automation))
        if as_json:
            emit_json(operation_view(op, rt.clock.now()).json())
        else:
            say(
                f"{op.operation_id} {op.state.value} (remote job "
                f"{op.remote_job_id or 'none'}) at {iso(rt.clock.now())}"
            )
    code = run_exit(op.state)
    if code is RunExit.INTERRUPTED:
        say(f"interrupted: {op.operation_id} is still {op.state.value}", err=True)
    raise SystemExit(int(code))


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

    from jobtrail.cli.demo import run_demo

    explicit = click.get_current_context().find_root().params.get("db")
    folder = Path(tempfile.mkdtemp(prefix="jobtrail-demo-"))
    db = explicit or str(folder / "demo.db")
    data = settings.data_dir if explicit else folder / "jobtrail-data"
    console = Console(highlight=False)  # as wide as the terminal (COLUMNS): the table fits it
    with console.status("running the demo…") as status:

        def progress(counts: dict[State, int]) -> None:
            status.update(" ".join(f"{state}={n}" for state, n in sorted(counts.items())))

        rows_, verdict = await run_demo(db, data, progress, results=settings.results)
    # Ids are never cut (a cut id cannot be pasted back); the prose gives way (cli/tables).
    columns = (
        Col(header="scenario"),
        Col(header="operation", is_id=True),
        Col(header="state"),
        Col(header="remote job", is_id=True),
        Col(header="attempts"),
        Col(header="status calls"),
        Col(header="outcome"),
    )
    rows = [
        [
            cell(row.scenario),
            cell(row.op.operation_id),
            cell(row.op.state.value),
            cell(row.op.remote_job_id or "-"),
            cell(str(row.attempts)),
            cell(str(row.status_calls)),
            cell(row.outcome),
        ]
        for row in rows_
    ]
    print_rows(columns, rows, title="jobtrail demo", on=console)
    console.print(verdict.message())
    shown = shown_url(db)
    console.print(  # whole lines, so that the command can be pasted back
        f"\nledger: {shown}\nexplore: jobtrail --db {shown} explain {rows_[1].op.operation_id}",
        soft_wrap=True,
    )
    if not verdict.ok:
        raise SystemExit(1)


COMMANDS.append(demo)
