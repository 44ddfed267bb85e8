"""The figures of `GET /metrics` (core/metrics.py) as OpenTelemetry metrics, beside the
traces (providers/tracing.py), through `opentelemetry-api` only: registered only when an
SDK meter provider is configured (the API's own providers record nothing, so nothing is
read for them). The figures come from the ledger, as the scrape's do: a refresher reads
`Ledger.metric_counts` every `every` seconds and the observable instruments report the
last reading (an instrument's callback cannot await the ledger).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterable
from typing import TYPE_CHECKING

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation

from jobtrail.core.metrics import (
    LedgerCounts,
    calls_by_class,
    due_lateness,
    needing_person,
    poll_lateness,
)
from jobtrail.errors import JobtrailError

if TYPE_CHECKING:
    from jobtrail.ledger import Ledger

REFRESH_SECONDS = 15.0
log = logging.getLogger("jobtrail.metrics")

Figures = Callable[[LedgerCounts], Iterable[Observation]]


def sdk_configured(provider: MeterProvider) -> bool:
    """False for the API's own providers (the proxy before an SDK is set, the no-op one)."""
    return not type(provider).__module__.startswith("opentelemetry.metrics")


class OtelMetrics:
    def __init__(self, ledger: Ledger, provider: MeterProvider) -> None:
        self.ledger = ledger
        self.counts: LedgerCounts | None = None
        meter = provider.get_meter("jobtrail")
        gauges: list[tuple[str, str, Figures]] = [
            ("jobtrail.operations", "Operations by local state and provider.", _operations),
            ("jobtrail.operations_needing_person", "Operations waiting for a person.",
             lambda c: [Observation(needing_person(c))]),
            ("jobtrail.oldest_due_lateness", "How long the earliest due operation has been due.",
             lambda c: [Observation(due_lateness(c))]),
            ("jobtrail.create_unsettled_by_tier",
             "Operations settling a lost create answer, by state and reconciliation tier.",
             lambda c: [Observation(n, {"state": s, "tier": t})
                        for (s, t), n in c.unsettled_tiers.items()]),
            ("jobtrail.notice_backlog", "Notices to people waiting for delivery.",
             lambda c: [Observation(c.notice_backlog)]),
        ]  # fmt: skip
        for name, text, figures in gauges:
            meter.create_observable_gauge(name, [self._callback(figures)], description=text)
        meter.create_observable_counter(
            "jobtrail.calls", [self._callback(_calls)],
            description="Calls made to providers, by kind, provider and outcome class.",
        )  # fmt: skip
        # Poll lateness is stored already bucketed and summed over every worker: the API's
        # Histogram only takes single measurements, to be bucketed by this process' SDK, so
        # the stored histogram is reported as the three monotonic series of its scrape.
        lateness: list[tuple[str, str, str, Figures]] = [
            ("bucket", "1", "Status reads at most `le` seconds late, by provider and le.",
             lambda c: [Observation(n, {"provider": p, "le": le})
                        for p, h in poll_lateness(c).items() for le, n in h.buckets]),
            ("sum", "s", "Status reads' lateness in all, by provider.",
             lambda c: [Observation(h.sum, {"provider": p}) for p, h in poll_lateness(c).items()]),
            ("count", "1", "Status reads counted for their lateness, by provider.",
             lambda c: [Observation(h.count, {"provider": p})
                        for p, h in poll_lateness(c).items()]),
        ]  # fmt: skip
        for part, unit, text, figures in lateness:
            meter.create_observable_counter(
                f"jobtrail.poll_lateness.{part}", [self._callback(figures)], unit=unit,
                description=text,
            )  # fmt: skip

    def _callback(self, figures: Figures) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def observe(options: CallbackOptions) -> Iterable[Observation]:
            return [] if self.counts is None else list(figures(self.counts))

        return observe

    async def refresh(self) -> None:
        self.counts = await self.ledger.metric_counts()


def _operations(c: LedgerCounts) -> list[Observation]:
    return [Observation(n, {"state": s, "provider": p}) for (s, p), n in c.operations.items()]


def _calls(c: LedgerCounts) -> list[Observation]:
    return [
        Observation(n, {"kind": k, "provider": p, "outcome": o})
        for (k, p, o), n in calls_by_class(c).items()
    ]


@contextlib.asynccontextmanager
async def otel_metrics(
    ledger: Ledger, provider: MeterProvider | None = None, every: float = REFRESH_SECONDS
) -> AsyncIterator[OtelMetrics | None]:
    """The instruments, refreshed while the context lasts; None when no SDK is set."""
    chosen = provider or metrics.get_meter_provider()
    if not sdk_configured(chosen):
        yield None
        return
    found, stop = OtelMetrics(ledger, chosen), asyncio.Event()

    async def refreshing() -> None:
        while not stop.is_set():
            try:
                await found.refresh()
            except JobtrailError as exc:
                log.warning("OpenTelemetry metrics not refreshed: %s", exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), every)

    task = asyncio.create_task(refreshing())
    try:
        yield found
    finally:
        stop.set()
        await task
