"""Commands on operations: submit, status, list, history, explain, cancel, result,
escalation, resolve, extend."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from jobtrail.cli.context import (
    Settings,
    cell,
    default_actor,
    emit_json,
    fail,
    json_option,
    opened,
    pass_settings,
    provider_module_option,
    run_async,
    say,
)
from jobtrail.core.durations import parse_duration
from jobtrail.core.states import State
from jobtrail.errors import InvalidInput
from jobtrail.facts import usage_text, usage_totals
from jobtrail.providers.credentials import unset_credentials
from jobtrail.views import (
    driver,
    iso,
    operation_json,
    progress_text,
    relative,
    transition_json,
)
from jobtrail.worker.blobs import is_file_location

console = Console(highlight=False)


def id_table(*headers: str) -> Table:
    """A table of ids and words, none of them ever cut (a cut id cannot be pasted back)."""
    table = Table(*headers)
    for column in table.columns:
        column.no_wrap = True
    return table


def print_table(table: Table) -> None:
    """Print `table` whole at any terminal width, piped or not: narrower than the table,
    the lines are left to the terminal to wrap instead of cutting what is in them."""
    needed = Measurement.get(console, console.options.update_width(100_000), table).maximum
    wide = console if needed <= console.width else Console(highlight=False, width=needed)
    wide.print(table)


def _body(text: str) -> Any:
    if text.startswith("@"):
        name = text[1:]
        if not name:
            raise InvalidInput("--body @ needs a file name after the @ (or @- for stdin)")
        where = "stdin" if name == "-" else f"the body file {name}"
        try:
            raw = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
        except OSError as exc:
            raise InvalidInput(f"cannot read {where}: {exc.strerror}") from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInput(
                f"{where} is not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset "
                f"{exc.start}); save it as UTF-8 JSON"
            ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"the body is not valid JSON ({exc.msg} at line {exc.lineno})") from None


def _headers(values: tuple[str, ...]) -> dict[str, str]:
    headers = {}
    for value in values:
        name, sep, content = value.partition(":")
        if not sep or not name.strip():
            raise InvalidInput(f"write headers as 'Name: value', got {value.split(':')[0]!r}…")
        headers[name.strip()] = content.strip()
    return headers


def _path_values(values: tuple[str, ...]) -> dict[str, str]:
    """`--path group=rg1 --path name=w1`; each value is checked by the ledger."""
    found = {}
    for value in values:
        name, sep, content = value.partition("=")
        if not sep or not name.strip():
            raise InvalidInput(f"write path values as NAME=VALUE, got {value[:40]!r}")
        found[name.strip()] = content
    return found


def show(document: dict[str, Any]) -> None:
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(no_wrap=True)
    for field in (
        "operation_id",
        "state",
        "remote_job_id",
        "remote_state",
        "progress",
        "waiting_for",
        "provider",
        "provider_missing",
        "key",
        "trace_id",
        "idempotency_token",
        "request_fingerprint",
        "created_at",
        "result_deadline",
    ):
        value = document.get(field)
        if field == "progress" and value is not None:
            value = progress_text(value)
        if field in ("created_at", "result_deadline") and isinstance(value, str):
            at = datetime.fromisoformat(value.replace("Z", "+00:00"))
            value = f"{value} ({relative(at, datetime.now(UTC))})"
        if value is not None:
            table.add_row(field, cell(value if isinstance(value, str) else json.dumps(value)))
    result = document.get("result")
    if result:
        table.add_row(
            "result",
            cell("valid" if result["valid"] else "invalid: " + "; ".join(result["problems"])),
        )
    print_table(table)


@click.command()
@click.argument("provider")
@click.option(
    "--body",
    help="The request body: JSON text, @FILE, or @- for stdin. Omit it for a create sent "
    "without a body (a DELETE, or a POST with none).",
)
@click.option("--key", help="Operation key: the same key and request return the same operation.")
@click.option(
    "--header",
    "headers",
    multiple=True,
    metavar="'NAME: VALUE'",
    help="Extra request header (never a credential). Repeatable.",
)
@click.option(
    "--path",
    "path_values",
    multiple=True,
    metavar="NAME=VALUE",
    help="A value for a placeholder of the provider's create path ({group}, {name}): one "
    "URL path segment. Repeatable.",
)
@click.option(
    "--actor", default=default_actor, show_default="cli:$USER or JOBTRAIL_ACTOR", help="Who asks."
)
@click.option("--authorized-by", help="Who authorized the work.")
@click.option("--reason", help="Why the work is needed.")
@click.option(
    "--create-deadline", metavar="DURATION", help="Override the provider file's create deadline."
)
@click.option("--result-deadline", metavar="DURATION", help="Override the result deadline.")
@click.option("--cancel-deadline", metavar="DURATION", help="Override the cancel deadline.")
@json_option
@provider_module_option
@pass_settings
@run_async
async def submit(
    settings: Settings,
    provider: str,
    body: str | None,
    key: str | None,
    headers: tuple[str, ...],
    path_values: tuple[str, ...],
    actor: str,
    authorized_by: str | None,
    reason: str | None,
    create_deadline: str | None,
    result_deadline: str | None,
    cancel_deadline: str | None,
    as_json: bool,
    provider_modules: tuple[str, ...],
) -> None:
    """Record an operation for PROVIDER: a provider file, a NAME.toml in ./providers, a
    code provider's name (installed, or from --provider-module), or a profile shipped with
    jobtrail (`jobtrail provider list`).

    Nothing is sent by this command: the record is committed first, and a worker
    (`jobtrail worker`, or `jobtrail run OPERATION_ID`) sends it.
    """
    from jobtrail.providers.plugins import load_plugins
    from jobtrail.providers.resolve import resolve_provider

    spec = resolve_provider(provider, load_plugins(provider_modules))
    unset = unset_credentials(spec)  # said once the operation is recorded, not if refused
    async with opened(settings, create=True) as ledger:
        op, existing = await ledger.admit(
            spec,
            None if body is None else _body(body),
            headers=_headers(headers),
            path=_path_values(path_values),
            key=key,
            actor=actor,
            authorized_by=authorized_by,
            reason=reason,
            create_deadline=parse_duration(create_deadline) if create_deadline else None,
            result_deadline=parse_duration(result_deadline) if result_deadline else None,
            cancel_deadline=parse_duration(cancel_deadline) if cancel_deadline else None,
        )
        document = operation_json(op, ledger.clock()) | {"existing": existing}
    if unset is not None:
        say(unset.at_submit(), err=True)
    if as_json:
        emit_json(document)
    elif existing:
        show(document)
        say(
            f"\nThe key {op.key} already names this operation (same request): nothing new "
            f"was recorded. It is {op.state}."
        )
    else:
        show(document)
        console.print(
            f"\nRecorded. `jobtrail run {op.operation_id}` sends it now; "
            "a running `jobtrail worker` picks it up by itself."
        )


@click.command()
@click.argument("operation_id")
@json_option
@pass_settings
@run_async
async def status(settings: Settings, operation_id: str, as_json: bool) -> None:
    """Show one operation's record (OPERATION_ID may also be its key)."""
    from jobtrail.providers.plugins import not_installed

    async with opened(settings) as ledger:
        op = await ledger.find(operation_id)
        document = operation_json(op, ledger.clock())
    missing = not_installed(op)
    if missing is not None:
        document["provider_missing"] = f"{driver(op)} is {missing}"
    emit_json(document) if as_json else show(document)


@click.command("list")
@click.option(
    "--state",
    "states",
    multiple=True,
    type=click.Choice([s.value for s in State]),
    help="Only operations in this state. Repeatable.",
)
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 10_000))
@json_option
@pass_settings
@run_async
async def list_(settings: Settings, states: tuple[str, ...], limit: int, as_json: bool) -> None:
    """List operations, newest first. With --json: {"total", "shown", "operations", "totals"},
    `totals.usage` summing what the providers reported of work done and billed."""
    from jobtrail.store.finding import OperationQuery

    async with opened(settings) as ledger:
        found = await ledger.store.find_operations(
            OperationQuery(states=[State(s) for s in states], limit=limit)
        )
        now = ledger.clock()
    ops = found.operations
    if as_json:
        emit_json(
            {
                "total": found.total,
                "shown": len(ops),
                "operations": [operation_json(op, now) for op in ops],
                # what the providers reported of work done and billed, summed over those shown
                "totals": {"usage": usage_totals(ops)},
            }
        )
        return
    table = id_table(
        "operation", "state", "provider", "remote job", "remote state", "created", "key"
    )
    for op in ops:
        key = "" if op.key == op.operation_id else op.key
        table.add_row(
            *map(
                cell,
                (
                    op.operation_id,
                    op.state.value,
                    op.provider,
                    op.remote_job_id or "",
                    op.remote_state or "",
                    iso(op.created_at) or "",
                    key,
                ),
            )
        )
    print_table(table)


@click.command()
@click.argument("operation_id")
@json_option
@pass_settings
@run_async
async def history(settings: Settings, operation_id: str, as_json: bool) -> None:
    """Show an operation's transition history (append-only)."""
    async with opened(settings) as ledger:
        operation_id = (await ledger.find(operation_id)).operation_id
        transitions = await ledger.store.history(operation_id)
    if as_json:
        emit_json([transition_json(t) for t in transitions])
        return
    table = id_table("at", "actor", "from", "to", "evidence", "cause")
    for t in transitions:
        table.add_row(
            *map(
                cell,
                (
                    iso(t.at) or "",
                    t.actor,
                    t.from_state.value,
                    t.to_state.value,
                    t.evidence.value,
                    t.cause,
                ),
            )
        )
    print_table(table)


@click.command()
@click.argument("operation_id")
@json_option
@pass_settings
@run_async
async def explain(settings: Settings, operation_id: str, as_json: bool) -> None:
    """Tell an operation's story: what we asked, which remote job, what we observed, what
    we did next."""
    from jobtrail.providers.plugins import not_installed
    from jobtrail.story import read_story
    from jobtrail.views import timeline

    async with opened(settings) as ledger:
        story = await read_story(ledger, await ledger.find(operation_id))
    op, missing = story.op, not_installed(story.op)
    if not as_json:
        say(story.text(missing=missing))
        return
    events = timeline(op, story.history, story.attempts, story.observations)
    emit_json(
        operation_json(op, story.now)
        | ({"provider_missing": f"{driver(op)} is {missing}"} if missing else {})
        | {
            "request_body": story.body,
            "timeline": [{"at": iso(at), "event": text} for at, text in events],
        }
    )


@click.command()
@click.argument("operation_id")
@click.option("--reason", required=True, help="Why the job should stop.")
@click.option("--actor", default=default_actor, show_default="cli:$USER or JOBTRAIL_ACTOR")
@click.option("--expected-effect", help="What stopping should achieve (recorded with the intent).")
@json_option
@pass_settings
@run_async
async def cancel(
    settings: Settings,
    operation_id: str,
    reason: str,
    actor: str,
    expected_effect: str | None,
    as_json: bool,
) -> None:
    """Record the intent to cancel. The lease owner sends the cancel once and keeps
    observing; the operation is `cancelled` only when the provider says so."""
    async with opened(settings) as ledger:
        operation_id = (await ledger.find(operation_id)).operation_id
        op = await ledger.cancel(
            operation_id, actor=actor, reason=reason, expected_effect=expected_effect
        )
        document = operation_json(op, ledger.clock())
    emit_json(document) if as_json else show(document)


@click.command()
@click.argument("operation_id")
@json_option
@pass_settings
@run_async
async def result(settings: Settings, operation_id: str, as_json: bool) -> None:
    """Show the validated result summary and where the content is stored."""
    from jobtrail.client.result import read_back
    from jobtrail.results import open_results

    async with opened(settings) as ledger:
        op = await ledger.find(operation_id)
        # the summary must be the one its collection audited, and the stored content (a
        # file, database chunks or an object) must still hash to it
        problem = await ledger.result_problem(op) if op.result is not None else None
    summary = operation_json(op, op.created_at)["result"]
    if op.result is not None and op.result.location and problem is None:
        location = op.result.location
        results = None
        if not is_file_location(location):
            results = open_results(settings.results, data_dir=settings.data_dir, ledger=settings.db)
        try:
            stored = await read_back(location, op.result.sha256, results, settings.data_dir)
        finally:
            if results is not None:
                await results.close()
        if stored.path is not None:
            summary["location"] = str(stored.path)
        problem = stored.problem
    if problem:  # never shown as valid: what was validated is not what is stored now
        summary["valid"] = False
        summary["problems"] = [*summary["problems"], problem]
    if as_json:
        emit_json(
            {
                "operation_id": op.operation_id,
                "state": op.state.value,
                "result": summary,
                "usage": op.usage,
            }
        )
        if problem:
            raise SystemExit(1)
        return
    if summary is None:
        fail(f"{operation_id} has no result yet (state {op.state})")
    table = Table(show_header=False, box=None)
    for name in (
        "valid",
        "location",
        "content_type",
        "size",
        "sha256",
        "records",
        "checks",
        "problems",
    ):
        value = summary[name]
        table.add_row(name, cell(value if isinstance(value, str) else json.dumps(value)))
    if summary["partial"]:
        table.add_row("partial", f"yes: what the job finished before it ended {op.state}")
    if op.usage:
        table.add_row("usage", cell(usage_text(op.usage)))
    if summary["items"]:
        items = summary["items"]
        table.add_row(
            "items",
            f"{items['total']} total, {items['succeeded']} succeeded, {items['failed']} failed",
        )
        if items["failed_refs"]:
            table.add_row("failed items", cell(", ".join(items["failed_refs"][:50])))
    print_table(table)
    if problem:
        fail(problem)


COMMANDS = [submit, status, list_, history, explain, cancel, result]
