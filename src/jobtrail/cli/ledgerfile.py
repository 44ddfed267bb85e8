"""Commands on the ledger file itself: backup."""

from __future__ import annotations

import click

from jobtrail.cli.context import Settings, fail, opened, pass_settings, run_async


@click.command()
@click.argument("destination", type=click.Path(dir_okay=False))
@pass_settings
@run_async
async def backup(settings: Settings, destination: str) -> None:
    """Copy a consistent snapshot of a live SQLite ledger to DESTINATION, a new file.

    A plain copy of the ledger file misses what is still in its -wal file; this uses
    SQLite's online backup, so workers may keep running meanwhile."""
    if settings.is_postgres:
        fail(
            "backup copies a SQLite ledger; back up a PostgreSQL ledger with pg_dump "
            "(e.g. `pg_dump --format=custom --file ledger.dump DBNAME`), which also takes a "
            "consistent snapshot of a live database"
        )
    async with opened(settings) as ledger:
        operations, entries = await ledger.backup(destination)
    click.echo(
        f"backed up {settings.db} to {destination}: {operations} operations, "
        f"{entries} audit entries; `jobtrail --db {destination} audit verify` checks it"
    )


COMMANDS = [backup]
