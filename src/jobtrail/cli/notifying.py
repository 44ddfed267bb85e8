"""`jobtrail notify test URL`, and the notifier that `serve` and `worker` run beside the
worker (`--notify URL`, else the policy file's [notify], else the environment:
services/notify_setup.py; services/notify.py delivers, docs/dashboard.md describes)."""

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
from jobtrail.services.notify import Notifier, endpoint
from jobtrail.services.notify_setup import NotifySetup, notify_setup

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
        "to URL, signed as Standard Webhooks; slack+https://... posts Slack's text form. "
        "Repeatable. Endpoints: --notify, else the policy file's [notify] endpoints, else "
        "JOBTRAIL_NOTIFY (comma-separated). Secret, link, timeout: [notify] (secret = { env = "
        '"NAME" } or { file = "PATH" }), else JOBTRAIL_NOTIFY_SECRET, JOBTRAIL_DASHBOARD_URL.',
    )(fn)


def notifier_for(ledger: Ledger | None, setup: NotifySetup) -> Notifier:
    return Notifier(
        ledger, setup.endpoints, sign=setup.sign, dashboard=setup.dashboard, timeout=setup.timeout
    )


@contextlib.asynccontextmanager
async def notifying(ledger: Ledger, setup: NotifySetup) -> AsyncIterator[Notifier]:
    """The notifier running beside the caller's work until the block ends; then one last
    pass delivers what became due meanwhile (a failure waits for the next run). `setup` is
    `notify_setup(--notify)`'s, read before anything is opened: a mistake stops the start."""
    notifier = notifier_for(ledger, setup)
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
    """Send a sample notice to URL (slack+https://... for Slack's text form), signed with the
    secret `serve` would use (the policy file's [notify] secret, else JOBTRAIL_NOTIFY_SECRET),
    and say how it answered."""
    run_async(_test)(url)


async def _test(url: str) -> None:
    notifier = notifier_for(None, notify_setup((url,)))
    notifier.endpoints = [endpoint(url, "URL")]
    async with notifier:
        attempt, _ = await notifier.post(notifier.endpoints[0], sample(datetime.now(UTC)))
    click.echo(json.dumps({"outcome": attempt.outcome, "detail": attempt.detail,
                           "signed": notifier.sign is not None}))  # fmt: skip
    if attempt.outcome != "delivered":
        raise SystemExit(1)


COMMANDS = [notify]
