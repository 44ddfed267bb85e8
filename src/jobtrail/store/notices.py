"""The outbox of notices in both stores (migration 0021; queries in sql/<dialect>/notices.sql).

A change's notices are inserted by the group commit with its transitions (store/commit.py);
the verbs here claim, finish and read them. A claim is guarded by the row's `claims`
counter, so two notifiers on one ledger never deliver the same round twice; a notifier that
dies holding a claim leaves the notice due again when the claim runs out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from jobtrail.core.lateness import LatenessCount
from jobtrail.core.notices import DeliveryAttempt, Notice, Outboxed
from jobtrail.store.codec import Codec
from jobtrail.store.conn import Conn, Hooks, first


def notice_row(codec: Codec, notice: Notice) -> dict[str, Any]:
    return {
        "event_id": notice.event_id,
        "type": notice.type,
        "operation_id": notice.operation_id,
        "created_at": codec.t_out(notice.at),
        "document": json.dumps(notice.document(), ensure_ascii=False, sort_keys=True),
        "due_at": codec.t_out(notice.at),
    }


def outboxed(codec: Codec, row: Any) -> Outboxed:
    document = json.loads(row["document"])
    created = codec.t_in(row["created_at"])
    assert created is not None
    notice = Notice(
        event_id=row["event_id"],
        type=row["type"],
        at=created,
        operation_id=row["operation_id"],
        data=document["data"],
    )
    return Outboxed(
        notice=notice,
        due_at=codec.t_in(row["due_at"]),
        claims=row["claims"],
        tries=row["tries"],
        delivered_at=codec.t_in(row["delivered_at"]),
        gave_up_at=codec.t_in(row["gave_up_at"]),
        last_error=row["last_error"],
    )


def attempt_of(codec: Codec, row: Any) -> DeliveryAttempt:
    at = codec.t_in(row["at"])
    assert at is not None
    return DeliveryAttempt(
        event_id=row["event_id"],
        endpoint=row["endpoint"],
        at=at,
        outcome=row["outcome"],
        http_status=row["http_status"],
        detail=row["detail"],
    )


class NoticeVerbs(Hooks):
    """The outbox verbs of `Store` (store/engine.py), over its hooks."""

    async def add_notice(self, notice: Notice) -> None:
        """Write one notice alone (a census finding); a second with its id changes nothing."""
        row = notice_row(self.CODEC, notice)
        await self._write(lambda conn: conn.count(self.Q["insert_notice"], row))

    async def claim_notices(self, now: datetime, until: datetime, limit: int) -> list[Outboxed]:
        """Up to `limit` notices due by `now`, each claimed until `until` (due again then,
        should its notifier die)."""
        codec = self.CODEC

        async def run(conn: Conn) -> list[Outboxed]:
            due = await conn.rows(self.Q["due_notices"], (codec.t_out(now), limit))
            taken = []
            for row in due:
                args = {"until": codec.t_out(until), "event_id": row["event_id"]}
                got = await conn.rows(self.Q["claim_notice"], args | {"claims": row["claims"]})
                if found := first(got):
                    taken.append(outboxed(codec, found))
            return taken

        return await self._write(run, sync=False)

    async def finish_notice(self, box: Outboxed, attempts: Sequence[DeliveryAttempt]) -> bool:
        """Record a delivery round: its attempts, and the notice's state after it (`box`,
        carrying the claim it was delivered under). False if the claim was taken over."""
        t = self.CODEC.t_out
        state = {
            "event_id": box.notice.event_id,
            "claims": box.claims,
            "due_at": t(box.due_at),
            "tries": box.tries,
            "delivered_at": t(box.delivered_at),
            "gave_up_at": t(box.gave_up_at),
            "last_error": box.last_error,
        }
        rows = [
            {
                "event_id": a.event_id,
                "endpoint": a.endpoint,
                "at": t(a.at),
                "outcome": a.outcome,
                "http_status": a.http_status,
                "detail": a.detail,
            }
            for a in attempts
        ]

        async def run(conn: Conn) -> bool:
            if rows:
                await conn.many([(self.Q["insert_notice_attempt"], rows)])
            return bool(await conn.count(self.Q["finish_notice"], state))

        return await self._write(run)

    async def notices(self, operation_id: str | None = None, limit: int = 1000) -> list[Outboxed]:
        """The notices of one operation, or all (oldest first, up to `limit`)."""
        codec = self.CODEC
        name, args = ("notices_of", (operation_id,)) if operation_id else ("all_notices", (limit,))

        async def run(conn: Conn) -> list[Outboxed]:
            return [outboxed(codec, row) for row in await conn.rows(self.Q[name], args)]

        return await self._read(run)

    async def delivery_attempts(self, event_id: str) -> list[DeliveryAttempt]:
        codec = self.CODEC

        async def run(conn: Conn) -> list[DeliveryAttempt]:
            rows = await conn.rows(self.Q["notice_attempts_of"], (event_id,))
            return [attempt_of(codec, row) for row in rows]

        return await self._read(run)

    async def metric_rows(self) -> dict[str, list[Any]]:
        """The rows behind the metrics (core/metrics.py), read in one transaction."""
        names = (
            "metric_operations", "metric_attempts", "metric_folded_reads", "notice_backlog",
            "metric_unsettled", "metric_poll_lateness",
        )  # fmt: skip
        codec = self.CODEC

        async def run(conn: Conn) -> dict[str, list[Any]]:
            found = {name: [dict(row) for row in await conn.rows(self.Q[name])] for name in names}
            for row in found["metric_unsettled"]:
                row["capabilities"] = codec.capabilities(row["capabilities"])
            return found

        return await self._read(run)

    async def add_poll_lateness(self, counts: Sequence[LatenessCount]) -> None:
        """Add a worker's lateness counts to the stored ones, in one statement (a flush of
        services/lateness.py); may be lost to a power cut, as any metric may."""
        rows = json.dumps([[c.provider, c.le, c.n, c.seconds] for c in counts])
        if counts:
            await self._write(
                lambda conn: conn.count(self.Q["add_poll_lateness"], (rows,)), sync=False
            )

    async def notice_backlog(self) -> int:
        async def run(conn: Conn) -> int:
            (row,) = await conn.rows(self.Q["notice_backlog"])
            return int(row["n"])

        return await self._read(run)
