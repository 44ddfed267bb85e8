"""`jobtrail census PROVIDER`: the provider's jobs held against the ledger (services/census.py
takes it; `jobtrail docs census`)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from jobtrail.cli.context import (
    Settings,
    default_actor,
    emit_json,
    json_option,
    opened,
    pass_settings,
    run_async,
    say,
)
from jobtrail.cli.requests import parse_path_values
from jobtrail.core.census import Category, summary
from jobtrail.core.durations import parse_duration
from jobtrail.errors import InvalidInput
from jobtrail.providers.code.contract import CodeSpec
from jobtrail.providers.file.spec import ProviderSpec

if TYPE_CHECKING:
    from jobtrail.providers.registry import ProviderRegistry

SECOND_JOB_EXIT = 3  # a census that found a second job: the evidence of a duplicate


@click.command()
@click.argument("provider")
@click.option(
    "--since",
    default="7d",
    show_default=True,
    metavar="DURATION",
    help="Only jobs created this recently (and, for a per-operation census, operations).",
)
@click.option("--all", "show_all", is_flag=True, help="List the jobs that are not ours too.")
@click.option(
    "--max-requests",
    default=500,
    show_default=True,
    type=click.IntRange(1, 100_000),
    help="Lookups a per-operation census makes at most (a listing to scan keeps its own cap).",
)
@click.option(
    "--adopt",
    "adopt",
    multiple=True,
    metavar="JOB_ID",
    help="Adopt this job into a new operation (its status read first) instead of taking a "
    "census. Repeatable. Needs --reason.",
)
@click.option(
    "--cancel",
    "cancel",
    multiple=True,
    metavar="JOB_ID",
    help="Cancel this job (through the operation that follows it, adopted first when none "
    "does) instead of taking a census. Repeatable. Needs --reason.",
)
@click.option(
    "--path",
    "path_values",
    multiple=True,
    metavar="NAME=VALUE",
    help="With --adopt or --cancel: a value the provider's paths need for the job (Airflow's "
    "dag_id, listed by the census, and task_id), as submit takes it. Repeatable.",
)
@click.option("--reason", help="Why the jobs are adopted or cancelled (recorded).")
@click.option("--actor", help="Who takes the census or acts. [default: cli:$USER]")
@json_option
@pass_settings
def census(
    settings: Settings,
    provider: str,
    since: str,
    show_all: bool,
    max_requests: int,
    adopt: tuple[str, ...],
    cancel: tuple[str, ...],
    path_values: tuple[str, ...],
    reason: str | None,
    actor: str | None,
    as_json: bool,
) -> None:
    """List PROVIDER's jobs and hold each one carrying jobtrail's marker against the ledger:
    followed, ended here (running there), unknown here, a second job (must be zero), not
    ours. The census is recorded in the audit log. Exits 3 when it finds a second job.

    With --adopt or --cancel, act on those jobs instead (a person, by the default action
    policy): each is said on one line; exits 1 when any was refused. `jobtrail docs census`.
    """
    if adopt or cancel:
        if not reason or not reason.strip():
            raise click.BadParameter("say why (it is recorded)", param_hint="--reason")
        who = actor or default_actor()
        values = parse_path_values(path_values)
        acted = run_async(_act)(settings, provider, adopt, cancel, reason, who, values)
        if as_json:
            emit_json(acted)
        for item in [] if as_json else acted:
            say(_acted_line(item))
        if any(a["refused"] for a in acted):
            sys.exit(1)
        return
    try:
        window = parse_duration(since)
    except (ValueError, InvalidInput) as exc:
        raise click.BadParameter(str(exc), param_hint="--since") from None
    found = run_async(_census)(settings, provider, window, max_requests, actor or default_actor())
    document, second = found
    if as_json:
        emit_json(document)
    else:
        _show(document, show_all)
    if second:
        sys.exit(SECOND_JOB_EXIT)


async def _census(
    settings: Settings, provider: str, since: Any, max_requests: int, actor: str
) -> tuple[dict[str, Any], bool]:
    from jobtrail.services.census import census_json, take_census

    spec, registry = _provider(provider)
    try:
        async with opened(settings) as ledger:
            taken = await take_census(
                ledger, registry, spec, actor=actor, since=since, max_requests=max_requests
            )
            return census_json(taken, ledger.now()), bool(taken.of(Category.SECOND_JOB))
    finally:
        await registry.close()


async def _act(
    settings: Settings,
    provider: str,
    adopt: tuple[str, ...],
    cancel: tuple[str, ...],
    reason: str,
    actor: str,
    path: dict[str, str],
) -> list[dict[str, Any]]:
    """Each job adopted or cancelled in turn; a refusal is said and the next goes on (as
    the dashboard's bulk actions do)."""
    from jobtrail.errors import ActionRefused
    from jobtrail.services.census_actions import adopt_job, cancel_job

    spec, registry = _provider(provider)
    done: list[dict[str, Any]] = []
    try:
        async with opened(settings) as ledger:
            asked = [("adopt", j, adopt_job) for j in adopt]
            asked += [("cancel", j, cancel_job) for j in cancel]
            for action, job_id, act in asked:
                item: dict[str, Any] = {"action": action, "job_id": job_id, "refused": None}
                try:
                    op = await act(
                        ledger, registry, spec, job_id, actor=actor, reason=reason, path=path
                    )
                except (ActionRefused, InvalidInput) as exc:
                    item["refused"] = str(exc)
                else:
                    item |= {"operation_id": op.operation_id, "state": op.state.value}
                done.append(item)
    finally:
        await registry.close()
    return done


def _provider(name: str) -> tuple[ProviderSpec | CodeSpec, ProviderRegistry]:
    """The provider NAME names (a NAME.toml, a code provider's settings file included; an
    installed code provider; a shipped profile), and a registry with the code providers."""
    from jobtrail.providers.code.plugins import load_plugins
    from jobtrail.providers.registry import ProviderRegistry
    from jobtrail.providers.resolve import resolve_named

    plugins = load_plugins()
    return resolve_named(name, plugins), ProviderRegistry(connections=4, plugins=plugins)


def _acted_line(item: dict[str, Any]) -> str:
    if item["refused"]:
        return f"{item['action']} {item['job_id']}: refused: {item['refused']}"
    verb = "adopted" if item["action"] == "adopt" else "cancel asked"
    return f"{verb} {item['job_id']}: {item['operation_id']} ({item['state']})"


def _show(document: dict[str, Any], show_all: bool) -> None:
    counts = {Category(k): v for k, v in document["counts"].items()}
    say(f"census of {document['provider']} by {document['actor']} at {document['taken_at']}")
    say(f"it sees: {document['sees']}")
    say(f"listing: {document['reach']['words']}")
    say(summary(counts))
    if counts[Category.SECOND_JOB]:
        say(
            f"A SECOND JOB: {counts[Category.SECOND_JOB]} job(s) whose marker names an operation "
            "that follows another job. This is the evidence of a duplicate create: cancel or "
            "adopt each, and report it.",
            err=True,
        )
    for category in Category:
        if category is Category.NOT_OURS and not show_all:
            continue
        jobs = [j for j in document["jobs"] if j["category"] == category.value]
        if jobs:
            say(f"\n{category.words} ({len(jobs)})")
            for job in jobs:
                say(f"  {job['line']}")


COMMANDS = [census]
