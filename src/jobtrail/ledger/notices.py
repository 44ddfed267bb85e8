"""Notices to people (core/notices.py) through the ledger: raised with the change that
causes them, and the outbox verbs the notifier (services/notify.py) and the census use."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta

from jobtrail.core.lateness import LatenessCount
from jobtrail.core.metrics import LedgerCounts, settling_tier
from jobtrail.core.notices import DeliveryAttempt, Notice, Outboxed
from jobtrail.core.redact import Redactor
from jobtrail.ledger.common import LedgerBase


class Noticing(LedgerBase):
    async def raise_notice(self, notice: Notice, redactor: Redactor | None = None) -> None:
        """Put `notice` into the outbox on its own (the census' findings: core/notices.py
        `census_notice`), its data through the redaction chokepoint (`redactor`: the
        provider's, when it names one); raising one event id twice changes nothing."""
        clean = (redactor or Redactor()).json(dict(notice.data))
        await self.store.add_notice(replace(notice, data=clean))

    async def claim_notices(self, limit: int, hold: timedelta) -> list[Outboxed]:
        """Notices due now, each held for `hold` by the caller (due again after, should it
        die before finishing the round)."""
        now = self.now()
        return await self.store.claim_notices(now, now + hold, limit)

    async def finish_notice(self, box: Outboxed, attempts: Sequence[DeliveryAttempt]) -> bool:
        return await self.store.finish_notice(box, attempts)

    async def notices(self, operation_id: str | None = None) -> list[Outboxed]:
        """The outbox's notices (of one operation), oldest first, with their delivery state."""
        return await self.store.notices(operation_id)

    async def delivery_attempts(self, event_id: str) -> list[DeliveryAttempt]:
        return await self.store.delivery_attempts(event_id)

    async def notice_backlog(self) -> int:
        return await self.store.notice_backlog()

    async def add_poll_lateness(self, counts: Sequence[LatenessCount]) -> None:
        """Add a worker's poll lateness counts (core/lateness.py) to the ledger's."""
        await self.store.add_poll_lateness(counts)

    async def metric_counts(self) -> LedgerCounts:
        """The ledger's counts for the metrics, now (core/metrics.py renders them)."""
        rows = await self.store.metric_rows()
        next_due = await self.store.next_due()
        tiers: dict[tuple[str, str], int] = {}
        for r in rows["metric_unsettled"]:
            key = (r["state"], settling_tier(r["state"], r["capabilities"]).value)
            tiers[key] = tiers.get(key, 0) + int(r["n"])
        return LedgerCounts(
            now=self.now(),
            operations={(r["state"], r["provider"]): r["n"] for r in rows["metric_operations"]},
            attempts={
                (r["kind"], r["provider"], r["outcome"]): r["n"] for r in rows["metric_attempts"]
            },
            folded_reads={r["provider"]: int(r["n"]) for r in rows["metric_folded_reads"]},
            next_due=next_due,
            notice_backlog=int(rows["notice_backlog"][0]["n"]),
            unsettled_tiers=tiers,
            lateness={
                (r["provider"], r["le"]): (int(r["n"]), float(r["seconds"]))
                for r in rows["metric_poll_lateness"]
            },
        )
