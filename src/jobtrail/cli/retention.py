"""Retention commands: `prune`, and `archive show` / `archive verify` for what it wrote."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import click

from jobtrail.cli.context import (
    Settings,
    default_actor,
    emit_json,
    fail,
    json_option,
    opened,
    pass_settings,
    run_async,
)
from jobtrail.core.durations import parse_duration
from jobtrail.errors import JobtrailError
from jobtrail.ledger import PRUNABLE, Pruned


@click.command()
@click.option(
    "--finished-before",
    "age",
    metavar="AGE",
    help="Prune operations finished (and unchanged) for longer than this, e.g. 30d.",
)
@click.option(
    "--pack-after",
    "pack_age",
    metavar="AGE",
    help="Instead, pack operations finished for longer than this, e.g. 7d: their rows "
    "replaced in the ledger by one compressed row each, still read by explain, history, "
    "result, status, the dashboard and audit verify (needs the `pack` extra).",
)
@click.option(
    "--batch",
    type=click.IntRange(min=1),
    default=500,
    show_default=True,
    help="With --pack-after: operations packed per transaction.",
)
@click.option(
    "--archive",
    "archive_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The archive to write (gzip JSON Lines); must not exist yet.",
)
@click.option(
    "--no-archive", is_flag=True, help="Drop the pruned rows without keeping them anywhere."
)
@click.option("--actor", default=default_actor, show_default="cli:$USER or JOBTRAIL_ACTOR")
@json_option
@pass_settings
def prune(
    settings: Settings,
    age: str | None,
    pack_age: str | None,
    batch: int,
    archive_path: Path | None,
    no_archive: bool,
    actor: str,
    as_json: bool,
) -> None:
    """Move finished operations (succeeded, failed, cancelled, result_unavailable,
    result_validation_failed) with their history, attempts, observations, leases and audit
    entries into an archive, leaving a checkpoint that `audit verify` walks across. MCP task
    handles go with their operations, and every expired one too (its operation stays).
    With --pack-after, pack them in place instead (docs/guarantees/audit.md)."""
    if (age is None) == (pack_age is None):
        fail("name one of --finished-before AGE (prune) and --pack-after AGE (pack)")
    if pack_age is not None:
        if archive_path is not None or no_archive:
            fail("--pack-after keeps the operations in the ledger: it takes no --archive")
        _pack(settings, _age(pack_age), batch, actor, as_json)
        return
    assert age is not None
    if archive_path is None and not no_archive:
        fail(
            "prune removes rows for good: name an --archive FILE to keep them in, or pass "
            "--no-archive to drop them"
        )
    if archive_path is not None and no_archive:
        fail("choose one of --archive FILE and --no-archive")
    if archive_path is not None and archive_path.exists():
        fail(f"the archive {archive_path} already exists; name a new file")
    _prune(settings, _age(age), archive_path, actor, as_json)


def _age(text: str) -> timedelta:
    try:
        return parse_duration(text)
    except JobtrailError as exc:
        fail(str(exc))


@run_async
async def _pack(
    settings: Settings, older_than: timedelta, batch: int, actor: str, as_json: bool
) -> None:
    async with opened(settings) as ledger:
        batches = await ledger.pack(older_than, actor=actor, batch=batch)
    operations = [p.operation.operation_id for b in batches for p in b.operations]
    entries = sum(b.entries for b in batches)
    checkpoints = [b.checkpoint.seq for b in batches if b.checkpoint is not None]
    if as_json:
        emit_json(
            {"operations": operations, "audit_entries": entries, "checkpoint_seqs": checkpoints}
        )
        return
    if not operations:
        click.echo(f"nothing to pack: no operation {', '.join(PRUNABLE)} for that long")
        return
    click.echo(
        f"packed {len(operations)} operations and {entries} audit entries in "
        f"{len(checkpoints)} batches; checkpoint entries "
        + ", ".join(f"#{seq}" for seq in checkpoints)
    )


@run_async
async def _prune(
    settings: Settings, older_than: timedelta, archive_path: Path | None, actor: str, as_json: bool
) -> None:
    from jobtrail.ledger import archive

    def keep(pruned: Pruned) -> None:
        if archive_path is not None and pruned.operations:
            archive.write(archive_path, pruned)

    bind = archive.binding if archive_path is not None else None  # every line, in the chain
    async with opened(settings) as ledger:
        pruned = await ledger.prune(older_than, actor=actor, keep=keep, bind=bind)
    written = str(archive_path) if archive_path is not None and pruned.operations else None
    if as_json:
        emit_json(
            {
                "finished_before": pruned.finished_before.isoformat(),
                "operations": [p.operation.operation_id for p in pruned.operations],
                "audit_entries": pruned.entries,
                "checkpoint_seq": pruned.checkpoint.seq if pruned.checkpoint else None,
                "archive": written,
                "expired_tasks": pruned.expired_tasks,
            }
        )
        return
    tasks = f"; removed {pruned.expired_tasks} expired task handles" if pruned.expired_tasks else ""
    if not pruned.operations:
        states = ", ".join(PRUNABLE)
        click.echo(
            f"nothing to prune: no operation {states} before {pruned.finished_before}{tasks}"
        )
        return
    where = f"into {written}" if written else "without an archive (--no-archive)"
    assert pruned.checkpoint is not None
    click.echo(
        f"pruned {len(pruned.operations)} operations and {pruned.entries} audit entries "
        f"{where}; checkpoint entry #{pruned.checkpoint.seq}{tasks}"
    )


@click.group()
def archive() -> None:
    """Read archives written by `jobtrail prune`."""


@archive.command("show")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("operation_id")
@json_option
@pass_settings
@run_async
async def archive_show(settings: Settings, file: Path, operation_id: str, as_json: bool) -> None:
    """Tell an archived operation's story, as `explain` does for a live one; refused when
    any line of the archive is not what its checkpoint bound (`archive verify` lists all)."""
    from jobtrail.core.words import iso
    from jobtrail.ledger.archive import read, verify_archive
    from jobtrail.presentation.explain import explain_text
    from jobtrail.presentation.views import operation_view, timeline

    found = read(file)
    if problems := verify_archive(found, settings.audit_key):
        more = f" (and {len(problems) - 1} more: `jobtrail archive verify`)" if problems[1:] else ""
        fail(f"not shown: {problems[0]}{more}")
    item = found.get(operation_id)
    op, now = item.operation, found.checkpoint_time()
    args = (op, list(item.history), list(item.attempts), list(item.observations))
    if as_json:
        emit_json(
            operation_view(op, now).json()
            | {
                "archived": {"file": str(file), "pruned_at": found.header.get("pruned_at")},
                "timeline": [{"at": iso(at), "event": text} for at, text in timeline(*args)],
            }
        )
        return
    click.echo(f"(archived in {file}, pruned at {found.header.get('pruned_at')})")
    click.echo(explain_text(*args, now))


@archive.command("verify")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--ledger", "against_ledger", is_flag=True, help="Also find its checkpoint in the ledger."
)
@json_option
@pass_settings
@run_async
async def archive_verify(
    settings: Settings, file: Path, against_ledger: bool, as_json: bool
) -> None:
    """Check the archive's slice of the audit chain against its checkpoint entry (keyed
    with JOBTRAIL_AUDIT_KEY when set). Exit 0 only when it checks out."""
    from jobtrail.ledger.archive import read, verify_archive

    found = read(file)
    problems = verify_archive(found, settings.audit_key)
    if against_ledger and found.checkpoint is not None:
        async with opened(settings) as ledger:
            rows = await ledger.audit_rows()
        if not any(row.hash == found.checkpoint.hash for row in rows):
            problems.append(
                f"the ledger holds no checkpoint #{found.checkpoint.seq} with this archive's "
                "hash: the archive comes from another ledger, or the ledger was rewritten"
            )
    entries = sum(len(p.audit) for p in found.operations.values())
    if as_json:
        emit_json({"ok": not problems, "entries": entries, "problems": problems})
    elif problems:
        for problem in problems:
            click.echo(f"archive tampered: {problem}")
    else:
        seq = found.checkpoint.seq if found.checkpoint else None
        only = "" if found.lines_bound else " (audit lines only: its checkpoint binds no other)"
        click.echo(
            f"archive intact: {len(found.operations)} operations, {entries} audit entries, "
            f"checkpoint #{seq}{only}"
        )
    if problems:
        raise SystemExit(1)


COMMANDS = [prune, archive]
