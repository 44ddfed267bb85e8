"""What every command shares: where the ledger is, how to open it, how to print and fail."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, ParamSpec, TypeVar

import click

from jobtrail.errors import JobtrailError
from jobtrail.ledger import without_passwords
from jobtrail.services.defaults import actor, data_dir_for, ledger_url, results_url

if TYPE_CHECKING:  # imported where used: `jobtrail --version` needs none of them
    from rich.text import Text

    from jobtrail.ledger import Ledger

P = ParamSpec("P")
T = TypeVar("T")


@dataclass(frozen=True)
class Settings:
    db: str
    data_dir: Path
    results: str | None = None  # the result store's URL (jobtrail.results); None: files

    @property
    def audit_key(self) -> bytes | None:
        key = os.environ.get("JOBTRAIL_AUDIT_KEY")
        return key.encode("utf-8") if key else None

    @property
    def is_postgres(self) -> bool:
        return self.db.startswith(("postgresql://", "postgres://"))


def settings_from(db: str | None, data_dir: str | None, results: str | None = None) -> Settings:
    db = ledger_url(db)
    where = Path(data_dir) if data_dir is not None else data_dir_for(db)
    return Settings(db=db, data_dir=where, results=results_url(results))


def default_actor() -> str:
    return actor("cli")


@asynccontextmanager
async def opened(
    settings: Settings, *, create: bool = False, **ledger_options: Any
) -> AsyncIterator[Ledger]:
    """The ledger, opened for one command. Only commands that start work (`submit`) pass
    `create`: the others never leave an empty ledger behind a mistyped path."""
    from jobtrail.ledger import open_ledger
    from jobtrail.ledger.policy import policy_from_env

    options = {"actions": policy_from_env()} | ledger_options
    ledger = await open_ledger(settings.db, audit_key=settings.audit_key, create=create, **options)
    try:
        yield ledger
    finally:
        await ledger.close()


def run_async(fn: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, T]:
    """Run an async command body; turn jobtrail errors into one clear line and exit 1."""

    @wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        import asyncio

        try:
            return asyncio.run(fn(*args, **kwargs))
        except JobtrailError as exc:
            fail(str(exc))
        except KeyboardInterrupt:
            fail("interrupted")
        except BrokenPipeError:  # `jobtrail list | head`: the reader had enough
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(1)  # as rich's own console does on a broken pipe
        except OSError as exc:
            fail(f"{exc.strerror or exc} ({exc.filename or 'system call'})")

    return wrapper


def fail(message: str, code: int = 1) -> NoReturn:
    from jobtrail.presentation.text import shown_lines

    click.echo(f"error: {shown_lines(without_db_password(message))}", err=True)
    sys.exit(code)


def without_db_password(text: str) -> str:
    """`text` with the ledger URL's password masked, wherever an error put it."""
    context = click.get_current_context(silent=True)
    settings = context.find_object(Settings) if context is not None else None
    return without_passwords(text, settings.db) if settings is not None else text


def emit_json(document: Any) -> None:
    from jobtrail.presentation.text import json_text

    click.echo(json_text(document))


def say(text: str, *, err: bool = False) -> None:
    """Print text for people; whatever a provider put in it cannot drive the terminal."""
    from jobtrail.presentation.text import shown_lines

    click.echo(shown_lines(text), err=err)


def cell(value: object) -> Text:
    """A table cell for people: neutralized (`shown`) and never read as rich markup."""
    from rich.text import Text

    from jobtrail.presentation.text import shown

    return Text(shown(value))


# Options and decorators shared by several commands.
pass_settings = click.make_pass_decorator(Settings)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON (for agents).")
concurrency_option = click.option(
    "--concurrency",
    default=50,
    show_default=True,
    type=click.IntRange(1, 10_000),
    help="Operations the worker drives at once.",
)
worker_id_option = click.option(
    "--worker-id", help="Name recorded as the actor of this worker's steps."
)
lease_option = click.option(
    "--lease",
    default="60s",
    show_default=True,
    metavar="DURATION",
    help="How long the worker's claim holds an operation before others may take it over.",
)


def _origins(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    from jobtrail.agent.identity import checked_origin

    try:
        return tuple(checked_origin(v, "--allow-origin") for v in value)
    except JobtrailError as exc:
        raise click.BadParameter(str(exc)) from None


allow_origin_option = click.option(
    "--allow-origin",
    "origins",
    multiple=True,
    metavar="ORIGIN",
    envvar="JOBTRAIL_ALLOW_ORIGINS",
    callback=_origins,
    help="A browser page of this origin (scheme://host[:port]) may call /mcp with an agent's "
    "token; any other Origin header is answered 403 (a request without one, as from every "
    "non-browser client, and the server's own origin are allowed). Repeatable; "
    "JOBTRAIL_ALLOW_ORIGINS takes them separated by spaces.",
)
provider_module_option = click.option(
    "--provider-module",
    "provider_modules",
    multiple=True,
    metavar="MODULE",
    help="Load the code providers of this module (its PROVIDERS mapping), beside the "
    "installed ones (entry point group jobtrail.providers). Repeatable.",
)
