"""`jobtrail notify test URL`, and the notifier that `serve` and `worker` run beside the
worker (`--notify URL`; services/notify.py delivers, docs/dashboard.md describes)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

import click

from jobtrail.cli.context import run_async
from jobtrail.core.notices import Notice, event_id
from jobtrail.services.notify import (
    DASHBOARD_ENV,
    Notifier,
    endpoint,
    endpoints_from,
    signer,
)

if TYPE_CHECKING:
    from jobtrail.ledger import Ledger

F = TypeVar("F", bound=Callable[..., Any])


def notify_option(fn: F) -> F:
    """`--notify URL` (repeatable): where notices to people go."""
    return click.option(
        "--notify",
        "notify",
        multiple=True,
        metavar="URL",
        help="Deliver notices to people (an operation that needs one; docs/dashboard.md) "
        "to URL, signed as Standard Webhooks with JOBTRAIL_NOTIFY_SECRET; slack+https://... "
        "posts Slack's text form. Repeatable. [env JOBTRAIL_NOTIFY, comma-separated]",
    )(fn)


def notifier_for(ledger: Ledger | None, urls: tuple[str, ...]) -> Notifier:
    """The notifier of the endpoints given (or of JOBTRAIL_NOTIFY), errors naming the field."""
    import os

    return Notifier(
        ledger,
        endpoints_from(urls),
        sign=signer(),
        dashboard=os.environ.get(DASHBOARD_ENV) or None,
    )


@contextlib.asynccontextmanager
async def notifying(ledger: Ledger, urls: tuple[str, ...]) -> AsyncIterator[Notifier]:
    """The notifier running beside the caller's work until the block ends; then one last
    pass delivers what became due meanwhile (a failure waits for the next run)."""
    notifier = notifier_for(ledger, urls)
    if not notifier.endpoints:
        yield notifier
        return
    stop = asyncio.Event()
    async with notifier:
        task = asyncio.create_task(notifier.run(stop))
        try:
            yield notifier
        finally:
            stop.set()
            await task
            await notifier.deliver_due()


def sample(now: datetime) -> Notice:
    """A notice like the ones an operation raises, about no real operation."""
    op_id = "op_00000000000000000000000000"
    return Notice(
        event_id=event_id("sample", now.isoformat()),
        type="operation.needs_human",
        at=now,
        operation_id=op_id,
        data={
            "operation_id": op_id,
            "key": "sample",
            "provider": "sample",
            "remote_job_id": None,
            "trace_id": "0" * 32,
            "state": "needs_human",
            "next_step": "nothing: this is a sample notice from `jobtrail notify test`",
            "summary": "A sample notice: no operation needs a person.",
            "dashboard_path": f"/operations/{op_id}",
        },
    )


@click.group()
def notify() -> None:
    """Notices to people (docs/dashboard.md)."""


@notify.command("test")
@click.argument("url")
def notify_test(url: str) -> None:
    """Send a signed sample notice to URL (slack+https://... for Slack's text form) and say
    how it answered."""
    run_async(_test)(url)


async def _test(url: str) -> None:
    notifier = notifier_for(None, ())
    notifier.endpoints = [endpoint(url, "URL")]
    async with notifier:
        attempt, _ = await notifier.post(notifier.endpoints[0], sample(datetime.now(UTC)))
    click.echo(json.dumps({"outcome": attempt.outcome, "detail": attempt.detail,
                           "signed": notifier.sign is not None}))  # fmt: skip
    if attempt.outcome != "delivered":
        raise SystemExit(1)


COMMANDS = [notify]
