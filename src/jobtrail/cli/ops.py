"""Commands on operations: submit, status, list, history, explain, cancel (`result` is in
cli/result.py; escalation, resolve and extend in cli/decisions.py)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import click

from jobtrail.cli.context import (
    Settings,
    cell,
    default_actor,
    emit_json,
    json_option,
    opened,
    pass_settings,
    provider_module_option,
    run_async,
    say,
)
from jobtrail.cli.records import not_installed_here, show
from jobtrail.cli.requests import parse_body, parse_headers, parse_path_values
from jobtrail.core.durations import parse_duration
from jobtrail.core.model import Operation
from jobtrail.core.nextstep import driver
from jobtrail.core.states import State
from jobtrail.core.words import counted, iso, relative
from jobtrail.presentation.facts import usage_totals
from jobtrail.presentation.views import operation_view, transition_json

if TYPE_CHECKING:  # rich is imported by the commands that draw tables, not by `status`
    from rich.text import Text


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
    from jobtrail.ledger import prepare_submission
    from jobtrail.providers.code.plugins import load_plugins
    from jobtrail.providers.credentials import unset_credentials
    from jobtrail.providers.resolve import resolve_provider

    spec = resolve_provider(provider, load_plugins(provider_modules))
    # Everything is checked before a word is said or a ledger is opened: a refused submit
    # warns of nothing and leaves no new ledger behind.
    payload, given = None if body is None else parse_body(body), parse_headers(headers)
    values = parse_path_values(path_values)
    deadlines = {
        name: parse_duration(text) if text else None
        for name, text in (
            ("create_deadline", create_deadline),
            ("result_deadline", result_deadline),
            ("cancel_deadline", cancel_deadline),
        )
    }
    prepare_submission(
        spec,
        payload,
        headers=given,
        path=values,
        key=key,
        create_deadline=deadlines["create_deadline"],
        result_deadline=deadlines["result_deadline"],
    )
    unset = unset_credentials(spec)  # said once the operation is recorded, not if refused
    async with opened(settings, create=True) as ledger:
        op, existing = await ledger.admit(
            spec,
            payload,
            headers=given,
            path=values,
            key=key,
            actor=actor,
            authorized_by=authorized_by,
            reason=reason,
            **deadlines,
        )
        document = operation_view(op, ledger.now()).json() | {"existing": existing}
    if unset is not None:
        say(unset.at_submit(), err=True)
    if (takeover := _takeover_note(spec, op)) is not None:
        say(f"note: {takeover}", err=True)
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
        say(
            f"\nRecorded. `jobtrail run {op.operation_id}` sends it now; "
            "a running `jobtrail worker` picks it up by itself."
        )


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
    """List operations, newest first: "50 of 60" when there are more than --limit. With
    --json: {"total", "shown", "operations", "totals"}, `totals.usage` summing what the
    providers reported of work done and billed."""
    from jobtrail.ledger import OperationQuery

    async with opened(settings) as ledger:
        found = await ledger.find_operations(
            OperationQuery(states=[State(s) for s in states], limit=limit)
        )
        now = ledger.now()
    ops = found.operations
    if as_json:
        emit_json(
            {
                "total": found.total,
                "shown": len(ops),
                "operations": [operation_view(op, now).json() for op in ops],
                # what the providers reported of work done and billed, summed over those shown
                "totals": {"usage": usage_totals(ops)},
            }
        )
        return
    from jobtrail.cli.tables import Col, print_rows

    columns = (
        Col(header="operation", is_id=True),
        Col(header="state"),
        Col(header="provider"),
        Col(header="remote job", is_id=True),
        Col(header="remote state"),
        Col(header="created"),
        Col(header="key"),
    )
    print_rows(columns, _list_rows(ops, now))
    say(_counted(len(ops), found.total))


def _list_rows(ops: list[Operation], now: datetime) -> list[list[Text]]:
    return [
        [
            cell(op.operation_id),
            cell(op.state.value),
            cell(op.provider),
            cell(op.remote_job_id or "-"),
            cell(op.remote_state or "-"),
            cell(relative(op.created_at, now)),
            cell("" if op.key == op.operation_id else op.key),
        ]
        for op in ops
    ]


def _counted(shown: int, total: int) -> str:
    if shown < total:
        return f"{shown} of {counted(total, 'operation')}, newest first (--limit shows more)"
    return counted(total, "operation")


@click.command()
@click.argument("operation_id")
@json_option
@pass_settings
@run_async
async def history(settings: Settings, operation_id: str, as_json: bool) -> None:
    """Show an operation's transition history (append-only)."""
    async with opened(settings) as ledger:
        operation_id = (await ledger.get(operation_id)).operation_id
        transitions = await ledger.history(operation_id)
    if as_json:
        emit_json([transition_json(t) for t in transitions])
        return
    from jobtrail.cli.tables import id_table, print_table

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
    from jobtrail.presentation.views import timeline
    from jobtrail.services.story import read_story

    async with opened(settings) as ledger:
        story = await read_story(ledger, await ledger.get(operation_id))
    op, missing = story.op, not_installed_here(story.op)
    if not as_json:
        say(story.text(missing=missing))
        return
    events = timeline(op, story.history, story.attempts, story.observations)
    view = operation_view(op, story.now, attempts=story.attempts, observations=story.observations)
    emit_json(
        view.json()
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
        operation_id = (await ledger.get(operation_id)).operation_id
        op = await ledger.cancel(
            operation_id, actor=actor, reason=reason, expected_effect=expected_effect
        )
        document = operation_view(op, ledger.now()).json()
    emit_json(document) if as_json else show(document)


COMMANDS = [submit, list_, history, explain, cancel]


def _takeover_note(spec: object, op: Operation) -> str | None:
    """What `submit` says when the operation's create deadline is shorter than a takeover
    after a worker dies mid-create (core/proof.takeover_rule). A code provider keeps its
    call timeout on its object: the default stands in for it here."""
    from jobtrail.core.proof import takeover_rule
    from jobtrail.providers.file.spec import DEFAULT_TIMEOUT, ProviderSpec

    timeout = spec.timeout if isinstance(spec, ProviderSpec) else DEFAULT_TIMEOUT
    return takeover_rule(op.capabilities, op.create_deadline - op.created_at, timeout)
