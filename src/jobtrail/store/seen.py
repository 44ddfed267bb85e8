""" "Seen again": a status read whose answer equals the last one its owner read (the worker's
fast path, worker/seen.py), recorded with the durable effect a folded unchanged read has
(store/commit.py): the open run's count and last time, the poll count and time, the lease
given back. Many such reads share one transaction and one statement per shape, queued as
the ledger's changes are (store/group.py), and never wait for the disk (base.must_sync: a
safe read that moved nothing).

A read is refused, and nothing of it written, unless the record is still the one its
owner's last write left (same version, same fence) with its status run still open: then
the caller judges the answer in full, as any other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from jobtrail.store.codec import storable
from jobtrail.store.conn import Conn, Hooks
from jobtrail.store.group import Grouped


@dataclass(frozen=True, kw_only=True, slots=True)
class SeenAgain:
    """One read seen again by the owner of `operation_id` (lease `fence`), the record at
    `version`: at `at`, next due at `next_poll_at`, the `poll_count`-th poll, answered
    under `request_id` (redacted)."""

    operation_id: str
    fence: int
    version: int
    at: datetime
    next_poll_at: datetime | None
    poll_count: int
    request_id: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class Stored:
    """A seen-again read as stored: the record's new version and poll time (a poll asked
    for meanwhile makes it due at once, as any releasing write does)."""

    version: int
    next_poll_at: datetime | None


class SeenVerbs(Hooks):
    """The seen-again verb of `Store` (store/engine.py), over its hooks."""

    _seen: Grouped[SeenAgain, Stored | None] | None = None

    async def seen_again(self, read: SeenAgain) -> Stored | None:
        """Record a status read whose answer equals the last one its owner read, as a folded
        unchanged read is recorded, and give the lease back; None (nothing written) unless
        the record is still at the read's version and fence with its status run open."""
        if self._seen is None:
            self._seen = Grouped(self._seen_all)
        return await self._seen.submit(read)

    async def _seen_all(self, reads: Sequence[SeenAgain]) -> list[Stored | None]:
        t, Q = self.CODEC.t_out, self.Q
        order = sorted(range(len(reads)), key=lambda i: reads[i].operation_id)  # lock order
        args = [
            {
                "operation_id": r.operation_id,
                "fence": r.fence,
                "version": r.version,
                "at": t(r.at),
                "next_poll_at": t(r.next_poll_at),
                "poll_count": r.poll_count,
                "request_id": storable(r.request_id),
            }
            for r in (reads[i] for i in order)
        ]

        async def run(conn: Conn) -> list[Stored | None]:
            rows = await conn.each([(Q["seen_again"], a) for a in args])
            done = [a for a, row in zip(args, rows, strict=True) if row is not None]
            if done:
                clock = self.lease_clock()
                released = [
                    {"released_at": a["at"], "clock": clock} | a for a in done
                ]  # the lease row's columns, by name
                await conn.many([(Q["fold_seen_again"], done), (Q["release_lease_row"], released)])
            stored: list[Stored | None] = [None] * len(reads)
            for i, row in zip(order, rows, strict=True):
                if row is not None:
                    when = row["next_poll_at"]
                    stored[i] = Stored(
                        version=row["version"],
                        next_poll_at=None if when is None else self.CODEC._t(when),
                    )
            return stored

        return list(await self._write(run, sync=False))
