"""`jobtrail census PROVIDER`: the provider's jobs held against the ledger (services/census.py
takes it; `jobtrail docs census`)."""

from __future__ import annotations

import sys
from typing import Any

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
from jobtrail.core.census import Category, summary
from jobtrail.core.durations import parse_duration
from jobtrail.errors import InvalidInput

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
@click.option("--actor", help="Who takes the census. [default: cli:$USER]")
@json_option
@pass_settings
def census(
    settings: Settings,
    provider: str,
    since: str,
    show_all: bool,
    max_requests: int,
    actor: str | None,
    as_json: bool,
) -> None:
    """List PROVIDER's jobs and hold each one carrying jobtrail's marker against the ledger:
    followed, ended here (running there), unknown here, a second job (must be zero), not
    ours. The census is recorded in the audit log. Exits 3 when it finds a second job."""
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
    from jobtrail.providers.config import find_provider_named
    from jobtrail.providers.registry import ProviderRegistry
    from jobtrail.services.census import census_json, take_census

    spec = find_provider_named(provider)
    registry = ProviderRegistry(connections=4)
    try:
        async with opened(settings) as ledger:
            taken = await take_census(
                ledger, registry, spec, actor=actor, since=since, max_requests=max_requests
            )
            return census_json(taken, ledger.now()), bool(taken.of(Category.SECOND_JOB))
    finally:
        await registry.close()


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
