"""What every command shares: where the ledger is, how to open it, how to print and fail."""

from __future__ import annotations

import asyncio
import getpass
import os
import sys
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import wraps
from pathlib import Path
from typing import Any, NoReturn, ParamSpec, TypeVar

import click
from rich.text import Text

from jobtrail.errors import JobtrailError
from jobtrail.ledger import Ledger
from jobtrail.store import Store, open_store
from jobtrail.views import json_text, shown, shown_lines

P = ParamSpec("P")
T = TypeVar("T")


@dataclass(frozen=True)
class Settings:
    db: str
    data_dir: Path

    @property
    def audit_key(self) -> bytes | None:
        key = os.environ.get("JOBTRAIL_AUDIT_KEY")
        return key.encode("utf-8") if key else None

    @property
    def is_postgres(self) -> bool:
        return self.db.startswith(("postgresql://", "postgres://"))


def settings_from(db: str | None, data_dir: str | None) -> Settings:
    db = db or os.environ.get("JOBTRAIL_DB") or "jobtrail.db"
    if data_dir is None:
        data_dir = os.environ.get("JOBTRAIL_DATA")
    if data_dir is None:
        base = Path.cwd() if db.startswith(("postgresql://", "postgres://")) else Path(db).parent
        data_dir = str(base / "jobtrail-data")
    return Settings(db=db, data_dir=Path(data_dir))


def default_actor() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return os.environ.get("JOBTRAIL_ACTOR") or f"cli:{user}"


@asynccontextmanager
async def opened(settings: Settings, **ledger_options: Any) -> AsyncIterator[Ledger]:
    store: Store = await open_store(settings.db, audit_key=settings.audit_key)
    try:
        yield Ledger(store, **ledger_options)
    finally:
        await store.close()


def run_async(fn: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, T]:
    """Run an async command body; turn jobtrail errors into one clear line and exit 1."""

    @wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return asyncio.run(fn(*args, **kwargs))
        except JobtrailError as exc:
            fail(str(exc))
        except KeyboardInterrupt:
            fail("interrupted")
        except OSError as exc:
            fail(f"{exc.strerror or exc} ({exc.filename or 'system call'})")

    return wrapper


def fail(message: str, code: int = 1) -> NoReturn:
    click.echo(f"error: {shown_lines(message)}", err=True)
    sys.exit(code)


def emit_json(document: Any) -> None:
    click.echo(json_text(document))


def say(text: str, *, err: bool = False) -> None:
    """Print text for people; whatever a provider put in it cannot drive the terminal."""
    click.echo(shown_lines(text), err=err)


def cell(value: object) -> Text:
    """A table cell for people: neutralized (`shown`) and never read as rich markup."""
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
