"""`jobtrail status`: one operation's record. Its own module, as light to import as can
be: a user or an agent's shell runs it often, each time in a fresh process (bench/startup.py;
tests/unit/test_status_imports.py holds what it must not import)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import click

from jobtrail.cli.context import (
    Settings,
    emit_json,
    json_option,
    opened,
    pass_settings,
    run_async,
)
from jobtrail.cli.records import not_installed_here, show
from jobtrail.core.model import Operation
from jobtrail.core.nextstep import driver
from jobtrail.presentation.views import operation_view


@click.command()
@click.argument("operation_id")
@json_option
@pass_settings
def status(settings: Settings, operation_id: str, as_json: bool) -> None:
    """Show one operation's record (OPERATION_ID may also be its key)."""
    from jobtrail.ledger.peek import read_record

    # A SQLite ledger at this jobtrail's schema is read as it is, without opening it as a
    # store (no event loop, writer thread or migration): a fresh process reads one record.
    found = read_record(settings.db, operation_id)
    if found is None or found.operation is None:  # not there: perhaps packed (ledger.get)
        run_async(_status)(settings, operation_id, as_json)
        return
    op = found.operation
    view = operation_view(
        op, datetime.now(UTC), attempts=found.attempts, observations=found.observations
    )
    _show_status(op, view.json(), as_json)


async def _status(settings: Settings, operation_id: str, as_json: bool) -> None:
    async with opened(settings) as ledger:
        op = await ledger.get(operation_id)
        attempts = await ledger.attempts(op.operation_id)
        observations = await ledger.observations(op.operation_id)
        view = operation_view(op, ledger.now(), attempts=attempts, observations=observations)
    _show_status(op, view.json(), as_json)


def _show_status(op: Operation, document: dict[str, Any], as_json: bool) -> None:
    missing = not_installed_here(op)
    if missing is not None:
        document["provider_missing"] = f"{driver(op)} is {missing}"
    emit_json(document) if as_json else show(document)


COMMANDS = [status]
