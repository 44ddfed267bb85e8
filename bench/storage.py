"""Benchmark 6, stored bytes per poll: one operation polled 1,000 times without change against
the same operation polled twice, each in a ledger of its own (SQLite), by the real ledger,
store, runner and lease calls (DESIGN rule 14: cost grows with facts, not with polls).

The provider answers at once and always says "running" (the instant provider's shapes), and
a virtual clock jumps to each due time, so the figure is the ledger's storage alone. Two
measures: the ledger file after VACUUM (page_count * page_size: what the disk holds, in whole
pages) and the sum of the stored values of the operation's rows in every table (length() of
each column, so not rounded to pages).
"""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

from jobtrail.clock import VirtualClock
from jobtrail.core import outcomes as o
from jobtrail.core.model import AttemptKind, Operation
from jobtrail.core.states import RemoteStatus
from jobtrail.providers.file.config import parse_provider
from jobtrail.providers.protocol import Reply
from jobtrail.services.runtime import runtime

from bench.common import Figure, Report, provider_doc
from bench.instant import BASE, NAME, InstantProvider

TABLES = ("operations", "leases", "attempts", "transitions", "observations", "audit_log")
TARGET_BYTES = 2048


class SteadyProvider(InstantProvider):
    """The instant provider, but its job runs for ever with the same progress."""

    statuses = 0

    async def call(self, kind: AttemptKind, op: Operation) -> Reply:
        if kind is not AttemptKind.STATUS:
            return await super().call(kind, op)
        self._answers += 1
        self.statuses += 1
        request_id = f"req_sim_{self._answers:08d}"
        progress = {"completed": 1, "total": 3}
        outcome = o.Observed(
            remote_state="running",
            remote_status=RemoteStatus.RUNNING,
            progress=progress,
            provider_updated_at="2026-01-01T00:00:00.000000Z",
            http_status=200,
            request_id=request_id,
        )
        body = {"job_id": op.remote_job_id, "state": "running", "progress": progress}
        detail = {
            "status": 200,
            "elapsed_ms": 0.4,
            "headers": {"Content-Type": "application/json", "X-Request-ID": request_id},
            "body": body,
        }
        return Reply(outcome=outcome, detail=detail)


async def poll_one(folder: Path, polls: int) -> tuple[int, int, dict[str, int]]:
    """(file bytes after VACUUM, value bytes of the operation's rows, rows per table) of a
    ledger holding one operation created and then polled `polls` times."""
    db = folder / f"ledger-{polls}.db"
    clock = VirtualClock()
    async with runtime(str(db), folder / "data", worker_id="bench", clock=clock) as rt:
        spec = parse_provider(provider_doc(BASE, poll_initial="1s", poll_cap="1s", name=NAME))
        provider = SteadyProvider(spec.capabilities)
        rt.providers.register(provider)
        await rt.ledger.submit(spec, {"report": "steady"}, key="steady", actor="bench")
        while provider.statuses < polls:
            due = await rt.ledger.next_due()
            assert due is not None, "the steady job never ends"
            clock.advance(max(0.0, (due - clock.now()).total_seconds()))
            for claim in await rt.ledger.claim("bench", 1, rt.runner.lease_for):
                await rt.runner.drive(claim.operation)
    conn = sqlite3.connect(db)
    try:
        conn.execute("VACUUM")
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        rows = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}
        values = sum(_value_bytes(conn, t) for t in TABLES)
    finally:
        conn.close()
    return pages * size, values, rows


def _value_bytes(conn: sqlite3.Connection, table: str) -> int:
    columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
    total = " + ".join(f"coalesce(length({c}), 0)" for c in columns)
    return int(conn.execute(f"SELECT coalesce(sum({total}), 0) FROM {table}").fetchone()[0])


async def run(quick: bool) -> Report:
    many = 200 if quick else 1000
    report = Report("stored bytes per unchanged poll (SQLite)")
    with tempfile.TemporaryDirectory(prefix="jobtrail-bench-") as name:
        folder = Path(name)
        file_two, values_two, rows_two = await poll_one(folder, 2)
        file_many, values_many, rows_many = await poll_one(folder, many)
    report.note(f"rows after 2 polls {rows_two}; after {many} polls {rows_many}")
    report.note(
        f"file after VACUUM: {file_two} B (2 polls), {file_many} B ({many} polls); stored "
        f"values: {values_two} B, {values_many} B"
    )
    report.add(_figure(f"value bytes, {many} polls vs 2", values_many, values_two))
    report.add(_figure(f"file bytes after VACUUM, {many} polls vs 2", file_many, file_two))
    return report


def _figure(name: str, value: int, baseline: int) -> Figure:
    return Figure(
        name=name,
        value=value,
        unit="B",
        baseline=baseline,
        baseline_name="the same operation polled twice",
        target=f"at most {TARGET_BYTES} B more",
        met=value - baseline <= TARGET_BYTES,
        higher_is_better=False,
    )
