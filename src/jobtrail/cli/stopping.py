"""What `worker` and `run` share about starting and stopping in front of a person: a loud
word about credentials that are not set, readable step logs (`-v`), and Ctrl-C handled in
two stages (stop taking work and say what is still running; a second one abandons it),
with the stop recorded in the audit log as a graceful stop."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from collections.abc import Callable

from jobtrail.cli.context import say
from jobtrail.presentation.text import shown
from jobtrail.providers.credentials import Unset
from jobtrail.services.runtime import Runtime


class Stopper:
    """Ctrl-C (SIGINT) and SIGTERM for a driver: the first sets `rt.worker.stop` and says
    what is still in flight; the second calls `abandon`."""

    def __init__(
        self, rt: Runtime, in_flight: Callable[[], list[str]], abandon: Callable[[], None]
    ) -> None:
        self.rt, self.in_flight, self.abandon = rt, in_flight, abandon
        self.signal: str | None = None
        self.abandoned: list[str] = []
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self._on_signal, sig)

    def _on_signal(self, sig: signal.Signals) -> None:
        busy = self.in_flight()
        if self.signal is None:
            self.signal = sig.name
            self.rt.worker.stop.set()
            if busy:
                say(
                    f"stopping ({sig.name}): no new work is taken; waiting for the step in "
                    f"flight on {', '.join(busy)} to finish. Press Ctrl-C again to abandon "
                    "it (its call stays recorded as sent, and is settled by the next owner).",
                    err=True,
                )
            else:
                say(f"stopping ({sig.name}): nothing in flight.", err=True)
            return
        if busy:
            say(f"abandoning the step in flight on {', '.join(busy)}.", err=True)
            self.abandoned = busy
            self.abandon()

    async def record(self, **counts: int) -> None:
        """Write the stop to the audit log: a person stopped this driver, it did not crash."""
        if self.signal is None:
            return
        data = {"graceful": True, "signal": self.signal, "abandoned": self.abandoned, **counts}
        await self.rt.ledger.record_stop(self.rt.runner.actor, data)


async def warn_unset_credentials(rt: Runtime, only: str | None = None) -> list[Unset]:
    """Name, on stderr, every credential variable that open operations' providers read and
    that is not set (providers.credentials says what each missing one means)."""
    missing = await rt.unset_credentials(only)
    for unset in missing:
        say(unset.at_start(), err=True)
    return missing


class _StepFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        when = self.formatTime(record, "%H:%M:%S")
        op = getattr(record, "operation_id", None)
        return shown(f"{when} {op or '-'} {record.getMessage()}")


def log_steps() -> None:
    """`-v`: each claim, call, outcome and release on stderr, one plain line each."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_StepFormatter())
    logger = logging.getLogger("jobtrail")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
