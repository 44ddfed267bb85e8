"""One group commit, written once for both dialects (store/engine.py runs it).

The results are those of applying the changes one by one in the order given. The guarded
updates go out together in operation-id order (so concurrent batches lock rows in the same
order), then everything the accepted changes append, alike rows in one `executemany` each,
then their audit entries. Each change is encoded beforehand by `prepare`, in the caller,
so the writer only executes and links the audit chain.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from jobtrail.core.model import Operation
from jobtrail.store import codec as c
from jobtrail.store.changes import (
    Change,
    CommitResult,
    Verdict,
    audited,
    closes_run,
    folds,
    kept_when_refused,
    must_sync,
    refusal,
)
from jobtrail.store.notices import notice_row

if TYPE_CHECKING:
    from jobtrail.store.conn import Conn, Hooks

# In this order, so that an attempt finished in the batch it started in is found.
_APPENDS = (
    "insert_attempt",
    "finish_attempt",
    "insert_transition",
    "insert_observation",
    "release_lease_row",
    "insert_notice",
)


@dataclass(frozen=True, kw_only=True, eq=False)
class Prepared(Change):
    """A change with its rows encoded (by `prepare`, before it is queued)."""

    update: tuple[str, Any]
    events: frozenset[str]
    fold: dict[str, Any] | None
    closes: bool
    attempts: tuple[dict[str, Any], ...]
    finished: dict[str, Any] | None
    transition_rows: tuple[dict[str, Any], ...]
    observation_rows: tuple[dict[str, Any], ...]
    audit_texts: tuple[tuple[str | None, str], ...]
    notice_rows: tuple[dict[str, Any], ...]
    sync: bool


def prepare(change: Change, codec: c.Codec, update: tuple[str, Any]) -> Prepared:
    """`change` with everything the writer will bind already encoded."""
    if isinstance(change, Prepared):
        return change
    attempts = (change.safe_read, change.attempt_started)
    finished = change.attempt_finished
    fold = codec.fold_row(change.observations[0]) if folds(change) else None
    # The change's fields copied as they are (no dataclass __init__ per field: this runs for
    # every change), then its encodings; a Prepared is as frozen as the Change it extends.
    prepared = object.__new__(Prepared)
    prepared.__dict__.update(
        change.__dict__,
        update=update,
        events=frozenset(c.storable(ob.event_id) for ob in change.observations if ob.event_id),
        fold=fold,
        closes=closes_run(change),
        # A read that may fold writes these only if it does not: see Batch._record.
        attempts=()
        if fold is not None
        else tuple(codec.attempt_row(at) for at in attempts if at is not None),
        finished=None if finished is None else codec.attempt_outcome_row(finished),
        transition_rows=tuple(map(codec.transition_row, change.transitions)),
        observation_rows=(
            () if fold is not None else tuple(map(codec.observation_row, change.observations))
        ),
        audit_texts=tuple((e.operation_id, e.canonical()) for e in change.audit),
        sync=must_sync(change),
        notice_rows=tuple(notice_row(codec, n) for n in change.notices),
    )
    return prepared


class Batch:
    def __init__(self, store: Hooks, changes: Sequence[Prepared]) -> None:
        self.store, self.changes, self.Q = store, changes, store.Q
        self.verdicts: dict[int, Verdict] = {}
        self.stored: dict[int, Operation] = {}
        self.sealed: list[tuple[str | None, str]] = []  # observation runs closed by this batch
        self._clock: list[float | None] = []  # the lease clock, read once per batch

    async def run(self, conn: Conn) -> list[CommitResult]:
        seen: set[str] = set()
        if wanted := set().union(*(ch.events for ch in self.changes)):
            found = await conn.rows(self.Q["known_events"], (self.store.array(sorted(wanted)),))
            seen = {row["event_id"] for row in found}
        segment: list[int] = []
        pending: set[str] = set()
        for i, change in enumerate(self.changes):
            if change.events & pending:  # an earlier change of this batch may record it
                await self._apply(conn, segment, seen)
                segment, pending = [], set()
            if change.events & seen:
                self.verdicts[i] = Verdict.DUPLICATE_EVENT
            else:
                segment.append(i)
                pending |= change.events
        await self._apply(conn, segment, seen)
        duplicates = [i for i, v in self.verdicts.items() if v is Verdict.DUPLICATE_EVENT]
        await self._load_current(conn, duplicates)
        audit = [
            text
            for i, ch in enumerate(self.changes)
            for entry, text in zip(ch.audit, ch.audit_texts, strict=True)
            if audited(ch, self.verdicts[i], entry.kind)
        ]
        await self.store._append_audit(conn, (), audit + self.sealed)
        return [
            CommitResult(verdict=self.verdicts[i], operation=self.stored.get(i))
            for i in range(len(self.changes))
        ]

    async def _fold(self, conn: Conn, accepted: list[int]) -> set[int]:
        """The accepted changes whose status read folded into an open observation run."""
        candidates = [i for i in accepted if self.changes[i].fold is not None]
        if not candidates:
            return set()
        sql = self.Q["fold_observation"]
        rows = await conn.each([(sql, self.changes[i].fold) for i in candidates])
        return {i for i, row in zip(candidates, rows, strict=True) if row is not None}

    async def _close_runs(self, conn: Conn, indexes: list[int]) -> None:
        """Close the open observation runs of these changes' operations, sealing each."""
        if not indexes:
            return
        ops = [self.changes[i].operation for i in indexes]
        when = [op.updated_at or datetime.now(UTC) for op in ops]
        codec, array = self.store.CODEC, self.store.array
        args = (array([op.operation_id for op in ops]), array([codec.t_out(t) for t in when]))
        for row in await conn.rows(self.Q["close_runs"], args):
            run = codec.observation(row)
            assert run.closed_at is not None
            entry = c.run_closed(run, run.closed_at)
            self.sealed.append((entry.operation_id, entry.canonical()))

    async def _load_current(self, conn: Conn, indexes: list[int]) -> None:
        if ids := [self.changes[i].operation.operation_id for i in indexes]:
            rows = await conn.rows(self.Q["current"], (self.store.array(ids),))
            current = {row["operation_id"]: self.store.CODEC.operation(row) for row in rows}
            self.stored |= {
                i: current[op_id] for i, op_id in zip(indexes, ids, strict=True) if op_id in current
            }

    async def _apply(self, conn: Conn, segment: list[int], seen: set[str]) -> None:
        if not segment:
            return
        order = sorted(segment, key=lambda i: (self.changes[i].operation.operation_id, i))
        rows = await conn.each([self.changes[i].update for i in order])
        updated = dict(zip(order, rows, strict=True))
        await self._load_current(conn, [i for i in segment if updated[i] is None])
        folded = await self._fold(conn, [i for i in segment if updated[i] is not None])
        opened = [i for i in segment if updated[i] is not None and i not in folded]
        await self._close_runs(conn, [i for i in opened if self.changes[i].closes])
        writes: dict[str, list[Any]] = {query: [] for query in _APPENDS}
        for i in segment:
            self._record(i, updated[i], i in folded, writes, seen)
        await conn.many([(self.Q[query], args) for query, args in writes.items() if args])
        ends = [i for i in opened if self.changes[i].operation.state.ends_automation]
        await self._close_runs(conn, ends)

    def _lease_clock(self) -> float | None:
        if not self._clock:
            self._clock.append(self.store.lease_clock())
        return self._clock[0]

    def _record(
        self, i: int, row: Any, folded: bool, writes: dict[str, list[Any]], seen: set[str]
    ) -> None:
        """Change `i`'s verdict, and the rows it appends (into `writes`)."""
        change = self.changes[i]
        codec = self.store.CODEC
        if row is None:
            self.verdicts[i] = verdict = refusal(change, self.stored.get(i))
            if (kept := kept_when_refused(change, verdict)) is not None:
                writes["finish_attempt"].append(codec.attempt_outcome_row(kept))
            return
        self.verdicts[i], self.stored[i] = Verdict.OK, codec.after_update(change.operation, row)
        seen |= change.events
        if change.release:
            op = change.operation
            writes["release_lease_row"].append(
                {
                    "released_at": codec.t_out(op.updated_at),
                    "clock": self._lease_clock(),
                    "operation_id": op.operation_id,
                    "fence": change.owner_fence,
                }
            )
        if folded:
            return
        if change.fold is not None:
            # a status read alone (changes.folds) that opens a run: its rows, encoded only now
            assert change.safe_read is not None
            writes["insert_attempt"].append(codec.attempt_row(change.safe_read))
            writes["insert_observation"].append(codec.observation_row(change.observations[0]))
            return
        writes["insert_attempt"] += change.attempts
        if change.finished is not None:
            writes["finish_attempt"].append(change.finished)
        writes["insert_transition"] += change.transition_rows
        writes["insert_observation"] += change.observation_rows
        writes["insert_notice"] += change.notice_rows
