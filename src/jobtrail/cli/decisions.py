"""Commands for people in charge: escalation bundles and recorded human decisions."""

from __future__ import annotations

import click

from jobtrail.cli.context import (
    Settings,
    emit_json,
    fail,
    json_option,
    opened,
    pass_settings,
    provider_module_option,
    run_async,
    say,
)
from jobtrail.cli.records import show
from jobtrail.core.durations import parse_duration
from jobtrail.errors import JobtrailError
from jobtrail.presentation.views import operation_view
from jobtrail.providers.registry import ProviderRegistry
from jobtrail.services import decisions
from jobtrail.services.story import read_story


@click.command()
@click.argument("operation_id")
@json_option
@pass_settings
@run_async
async def escalation(settings: Settings, operation_id: str, as_json: bool) -> None:
    """Print the escalation bundle (JSON, with or without --json) for a person or the
    provider's support: remote job id, trace id, request history and provider request ids.
    OPERATION_ID may also be the operation's key."""
    async with opened(settings) as ledger:
        story = await read_story(ledger, await ledger.get(operation_id))
    emit_json(story.escalation())


@click.command()
@click.argument("operation_id")
@click.option(
    "--decision",
    required=True,
    type=click.Choice(decisions.RESOLUTIONS),
    help="needs_human: adopt a remote job id, mark the operation failed, or mark it failed "
    "and submit the same request as a new operation (new key and token). "
    "result_validation_failed: mark-failed, accept-as-is (the result as it is, its problems "
    "kept), or collect-again.",
)
@click.option(
    "--job-id",
    help="With adopt: the remote job id to adopt. One the operation never saw is read "
    "through its provider first, and refused if it cannot be read.",
)
@click.option("--actor", required=True, help="Who decides.")
@click.option("--reason", required=True, help="Why.")
@provider_module_option
@json_option
@pass_settings
@run_async
async def resolve(
    settings: Settings,
    operation_id: str,
    decision: str,
    job_id: str | None,
    actor: str,
    reason: str,
    provider_modules: tuple[str, ...],
    as_json: bool,
) -> None:
    """Record a human decision for an operation that waits for one (OPERATION_ID may also
    be its key); `jobtrail explain` says which decisions fit. Adopting a job id the
    operation never saw reads it through the operation's provider first: a code provider's
    operation needs that plug-in here (installed, or --provider-module)."""
    from jobtrail.providers.code.plugins import load_plugins

    async with opened(settings) as ledger:
        # for adopt: reads a job id it never saw, with the operation's own provider
        try:
            plugins = load_plugins(provider_modules)
        except JobtrailError as exc:
            fail(str(exc))
        providers = ProviderRegistry(connections=1, plugins=plugins)
        try:
            done = await decisions.resolve(
                ledger, providers, operation_id, decision, actor=actor, reason=reason, job_id=job_id
            )
        finally:
            await providers.close()
        document = operation_view(done.op, ledger.now()).json()
    if done.replaced_by is not None:
        document["replaced_by"] = done.replaced_by.operation_id
    if as_json:
        emit_json(document)
    else:
        show(document)
        if done.replaced_by is not None:
            say(f"submitted again as {done.replaced_by.operation_id}")


@click.command()
@click.argument("operation_id")
@click.option(
    "--result-deadline",
    metavar="DURATION",
    help="Resume observing a result_timed_out operation until now + DURATION.",
)
@click.option(
    "--cancel-deadline",
    metavar="DURATION",
    help="Keep waiting for a cancellation_unconfirmed operation's cancel until now + DURATION.",
)
@click.option("--actor", required=True)
@click.option("--reason", required=True)
@json_option
@pass_settings
@run_async
async def extend(
    settings: Settings,
    operation_id: str,
    result_deadline: str | None,
    cancel_deadline: str | None,
    actor: str,
    reason: str,
    as_json: bool,
) -> None:
    """Extend a deadline and resume automation (a recorded human decision). OPERATION_ID
    may also be its key."""
    if (result_deadline is None) == (cancel_deadline is None):
        fail("give exactly one of --result-deadline or --cancel-deadline")
    by = parse_duration(result_deadline or cancel_deadline or "")
    async with opened(settings) as ledger:
        op = await decisions.extend(
            ledger,
            operation_id,
            deadline="result" if result_deadline else "cancel",
            by=by,
            actor=actor,
            reason=reason,
        )
        document = operation_view(op, ledger.now()).json()
    emit_json(document) if as_json else show(document)


COMMANDS = [escalation, resolve, extend]
