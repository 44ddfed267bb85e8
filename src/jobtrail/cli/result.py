"""`jobtrail result OP`: the validated result summary and where its content is stored,
re-hashed against the digest its collection audited before it is shown as valid."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

import click

from jobtrail.cli.context import (
    Settings,
    cell,
    emit_json,
    fail,
    json_option,
    opened,
    pass_settings,
    run_async,
)
from jobtrail.presentation.facts import usage_text


@click.command()
@click.argument("operation_id")
@json_option
@pass_settings
@run_async
# C901: the command's branches are its output forms (stored, missing, changed, --json, --out)
async def result(settings: Settings, operation_id: str, as_json: bool) -> None:  # noqa: C901
    """Show the validated result summary and where the content is stored."""
    from jobtrail.client.result import read_back
    from jobtrail.results import open_results
    from jobtrail.results.blobs import is_file_location

    async with opened(settings) as ledger:
        op = await ledger.get(operation_id)
        # the summary must be the one its collection audited, and the stored content (a
        # file, database chunks or an object) must still hash to it
        problem = await ledger.result_problem(op) if op.result is not None else None
    summary: Any = asdict(op.result) if op.result else None  # a dict whenever problem is set
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
    from rich.table import Table

    from jobtrail.cli.tables import print_table

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


COMMANDS = [result]
