"""Benchmark 1, durable transitions: operations moved submit -> accepted -> observing ->
result_collecting -> succeeded on SQLite (synchronous=FULL) by the real ledger, store, runner
and worker (group commit, worker concurrency 50), against a raw sqlite3 loop that writes the
same rows, with the same durability, in the same number of commits.

The provider answers at once (bench/instant.py), so the figure is the ledger's cost: every
call with an effect records its intent and its outcome, every safe read its outcome, with
transitions, observation runs, leases and hash-chained audit entries, each committed before
the step goes on.
"""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from jobtrail.ledger import Ledger
from jobtrail.providers.file.config import ProviderSpec, parse_provider
from jobtrail.services.runtime import runtime, settle_heap
from jobtrail.store.codec import MUTABLE
from jobtrail.store.sqlite import SqliteStore

from bench.common import Figure, Report, Stopwatch, provider_doc
from bench.instant import BASE, NAME, InstantProvider
from bench.writercpu import WriterCpu

T = TypeVar("T")
CONCURRENCY = 50  # the worker's default: steps in flight, whose writes share commits
SUBMITTERS = 50  # concurrent submit calls
TABLES = ("operations", "leases", "attempts", "transitions", "observations", "audit_log")


@dataclass
class Run:
    operations: int
    seconds: float
    submit_seconds: float
    commits: int
    submit_commits: int
    synced: int  # commits that waited for the disk (the rest: safe reads and leases only)
    changes: int  # rows written (inserted or updated), as SQLite counts them
    inserts: dict[str, int]
    updates: dict[str, int]
    states: dict[str, int]
    cpu: float = 0.0  # seconds of this process's CPU
    writer_cpu: float = 0.0  # of them, on the store's writer thread
    statements: int = 0  # SQL statements run, when counted (each executemany row is one)


class CountingWrites:
    """Counts write transactions by wrapping the store's one write path."""

    def __init__(self, store: SqliteStore) -> None:
        self.commits = 0
        self.synced = 0  # of them, commits that waited for the disk
        self._inner = store._write
        store._write = self  # type: ignore[method-assign,assignment]

    def __call__(self, fn: Callable[[Any], Any], *, sync: bool = True) -> Any:
        self.commits += 1
        self.synced += sync
        return self._inner(fn, sync=sync)


async def _submit_all(ledger: Ledger, spec: ProviderSpec, n: int) -> None:
    queue = iter(range(n))

    async def submitter() -> None:
        for i in queue:
            body = {"report": "monthly-sales", "month": f"2026-{1 + i % 12:02d}", "n": i}
            await ledger.submit(spec, body, key=f"bench-{i}", actor="bench")

    await asyncio.gather(*(submitter() for _ in range(SUBMITTERS)))


async def measure_jobtrail(
    folder: Path, n: int, *, count: bool = False, freeze: bool = False
) -> Run:
    """`count`: count the SQL statements the store runs (a trace callback: slower);
    `freeze`: `gc.freeze()` after start-up, as `jobtrail worker` does."""
    db = folder / "ledger.db"
    async with runtime(
        str(db), folder / "data", worker_id="bench-worker", concurrency=CONCURRENCY
    ) as rt:
        spec = parse_provider(provider_doc(BASE, poll_initial="1ms", poll_cap="1ms", name=NAME))
        rt.providers.register(InstantProvider(spec.capabilities))
        store = rt.ledger.store
        assert isinstance(store, SqliteStore)
        counting, writer = CountingWrites(store), WriterCpu(store)
        conn = store._conn
        if freeze:
            settle_heap()
        traced = [0]
        if count:
            conn.set_trace_callback(lambda _sql: traced.__setitem__(0, traced[0] + 1))
        cpu = time.process_time()
        changes = conn.total_changes
        watch = Stopwatch()
        await _submit_all(rt.ledger, spec, n)
        submit_seconds, submit_commits = watch.seconds, counting.commits
        await rt.worker.run(until_idle=True)
        seconds = watch.seconds
        cpu = time.process_time() - cpu
        changes = conn.total_changes - changes
        commits, synced = counting.commits, counting.synced
    with sqlite3.connect(db) as check:
        inserts = {t: check.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}
        one = lambda sql: check.execute(sql).fetchone()[0] or 0  # noqa: E731
        updates = {
            # Only a call with an effect is inserted as an intent and updated with its
            # outcome; a safe read is inserted once, finished.
            "attempts": one(
                "SELECT count(*) FROM attempts WHERE kind IN ('create', 'cancel', 'reconcile')"
            ),
            # One row per tenure: every claim but the first extends it, every claim releases.
            "leases": 2 * one("SELECT sum(fence) FROM operations") - inserts["leases"],
            # Runs closed, and reads folded into a run.
            "observations": one(
                "SELECT count(closed_at) + sum(seen_count - 1) FROM observations "
                "WHERE source = 'status'"
            ),
        }
        states = dict(check.execute("SELECT state, count(*) FROM operations GROUP BY state"))
    updates["operations"] = changes - sum(inserts.values()) - sum(updates.values())
    return Run(
        operations=n,
        seconds=seconds,
        submit_seconds=submit_seconds,
        commits=commits,
        submit_commits=submit_commits,
        synced=synced,
        changes=changes,
        inserts=inserts,
        updates=updates,
        states=states,
        cpu=cpu,
        writer_cpu=writer.seconds,
        statements=traced[0],
    )


# -- the baseline ---------------------------------------------------------------------------


def _rows(conn: sqlite3.Connection, sql: str, *args: Any) -> list[dict[str, Any]]:
    return [dict(row) for row in conn.execute(sql, args)]


class RawWrites:
    """The same rows as the jobtrail run wrote, as prepared statements for a raw loop: every
    operation gets the rows of one jobtrail operation (same sizes), renamed."""

    def __init__(self, ledger_db: Path, run: Run) -> None:
        conn = sqlite3.connect(ledger_db)
        conn.row_factory = sqlite3.Row
        op = _rows(conn, "SELECT * FROM operations WHERE state = 'succeeded' LIMIT 1")[0]
        op_id = op["operation_id"]
        self.op = op
        self.attempts = _rows(conn, "SELECT * FROM attempts WHERE operation_id = ?", op_id)
        self.transitions = _rows(conn, "SELECT * FROM transitions WHERE operation_id = ?", op_id)
        self.observations = _rows(conn, "SELECT * FROM observations WHERE operation_id = ?", op_id)
        self.audit = _rows(conn, "SELECT * FROM audit_log WHERE operation_id = ?", op_id)
        self.leases = _rows(conn, "SELECT * FROM leases WHERE operation_id = ?", op_id)
        conn.close()
        self.run = run
        self.audit_seq = 0

    def per_op(self, total: int, i: int) -> int:
        n = self.run.operations
        return total // n + (1 if i < total % n else 0)

    def statements(self) -> tuple[list[list[tuple[str, tuple[Any, ...]]]], int]:
        """([the submit writes of each operation], then the rest in step order), row count."""
        run, n = self.run, self.run.operations
        submits: list[list[tuple[str, tuple[Any, ...]]]] = []
        rest: list[list[tuple[str, tuple[Any, ...]]]] = []
        for i in range(n):
            op_id = f"op_raw_{i:08d}"
            submits.append([self._insert_op(op_id, i), self._insert_audit(op_id, 0)])
            makers: list[tuple[int, Callable[[str, int], tuple[str, tuple[Any, ...]]]]] = [
                (self.per_op(run.updates["operations"], i), self._update_op),
                (self.per_op(run.inserts["leases"], i), self._lease),
                (self.per_op(run.inserts["attempts"], i), self._attempt),
                (self.per_op(run.inserts["transitions"], i), self._transition),
                (self.per_op(run.inserts["observations"], i), self._observation),
                (self.per_op(run.inserts["audit_log"], i) - 1, self._later_audit),
                (self.per_op(run.updates["attempts"], i), self._finish_attempt),
                (self.per_op(run.updates["leases"], i), self._release),
                (self.per_op(run.updates["observations"], i), self._close_observation),
            ]
            # Each kind spread evenly over the operation's life; an update after its insert
            # (a lease row, one per tenure, is taken at the start of it).
            kinds = [
                ((j + (0.0 if make == self._lease else 0.5)) / count, order, make(op_id, j))
                for order, (count, make) in enumerate(makers)
                for j in range(count)
            ]
            rest.append([statement for _, _, statement in sorted(kinds, key=lambda k: k[:2])])
        longest = max(len(r) for r in rest)
        ordered = [r[step] for step in range(longest) for r in rest if step < len(r)]
        rows = sum(len(s) for s in submits) + len(ordered)
        # The submits in as many commits as jobtrail's (its creates share commits too).
        grouped = [
            [s for one in part for s in one] for part in _spread(submits, run.submit_commits)
        ]
        batches = _spread(ordered, run.commits - run.submit_commits)
        return [*grouped, *batches], rows

    def _insert_op(self, op_id: str, i: int) -> tuple[str, tuple[Any, ...]]:
        row = self.op | {
            "operation_id": op_id,
            "op_key": f"raw-{i}",
            "idempotency_token": f"idem_raw_{i:027d}",
            "state": "create_pending",
            "lease_owner": None,
            "lease_expires_at": None,
            "fence": 0,
            "version": 0,
        }
        row.pop("due_at", None)  # derived by the database
        marks = ", ".join("?" for _ in row)
        sql = f"INSERT INTO operations ({', '.join(row)}) VALUES ({marks})"
        return sql, tuple(row.values())

    def _update_op(self, op_id: str, j: int) -> tuple[str, tuple[Any, ...]]:
        columns = MUTABLE
        sets = ", ".join(f"{c} = ?" for c in columns)
        sql = f"UPDATE operations SET {sets}, version = version + 1 WHERE operation_id = ?"
        return sql, (*(self.op[c] for c in columns), op_id)

    def _lease(self, op_id: str, j: int) -> tuple[str, tuple[Any, ...]]:
        lease = self.leases[j % len(self.leases)]
        sql = (
            "INSERT INTO leases (operation_id, fence, owner, acquired_at, expires_at, "
            "released_at) VALUES (?, ?, ?, ?, ?, NULL)"
        )
        return sql, (op_id, j + 1, lease["owner"], lease["acquired_at"], lease["expires_at"])

    def _release(self, op_id: str, j: int) -> tuple[str, tuple[Any, ...]]:
        lease = self.leases[j % len(self.leases)]
        sql = (
            "UPDATE leases SET released_at = ? WHERE rowid = "
            "(SELECT max(rowid) FROM leases WHERE operation_id = ?)"
        )
        return sql, (lease["released_at"] or lease["expires_at"], op_id)

    def _attempt(self, op_id: str, j: int) -> tuple[str, tuple[Any, ...]]:
        at = self.attempts[j % len(self.attempts)] | {
            "attempt_id": f"at_{op_id}_{j}",
            "operation_id": op_id,
            "finished_at": None,
            "outcome": None,
            "http_status": None,
            "provider_request_id": None,
            "detail": None,
        }
        sql = f"INSERT INTO attempts ({', '.join(at)}) VALUES ({', '.join('?' for _ in at)})"
        return sql, tuple(at.values())

    def _finish_attempt(self, op_id: str, j: int) -> tuple[str, tuple[Any, ...]]:
        at = self.attempts[j % len(self.attempts)]
        sql = (
            "UPDATE attempts SET finished_at = ?, outcome = ?, http_status = ?, "
            "provider_request_id = ?, detail = ? WHERE attempt_id = ?"
        )
        values = (at["finished_at"], at["outcome"], at["http_status"], at["provider_request_id"])
        return sql, (*values, at["detail"], f"at_{op_id}_{j}")

    def _transition(self, op_id: str, j: int) -> tuple[str, tuple[Any, ...]]:
        tr = self.transitions[j % len(self.transitions)] | {"operation_id": op_id}
        tr.pop("seq")
        sql = f"INSERT INTO transitions ({', '.join(tr)}) VALUES ({', '.join('?' for _ in tr)})"
        return sql, tuple(tr.values())

    def _observation(self, op_id: str, j: int) -> tuple[str, tuple[Any, ...]]:
        ob = self.observations[j % len(self.observations)] | {"operation_id": op_id}
        ob |= {"closed_at": None}  # open, for the closing updates to find
        ob.pop("id")
        sql = f"INSERT INTO observations ({', '.join(ob)}) VALUES ({', '.join('?' for _ in ob)})"
        return sql, tuple(ob.values())

    def _close_observation(self, op_id: str, j: int) -> tuple[str, tuple[Any, ...]]:
        sql = (
            "UPDATE observations SET closed_at = ? WHERE id = (SELECT min(id) FROM "
            "observations WHERE operation_id = ? AND closed_at IS NULL)"
        )
        return sql, (self.op["updated_at"], op_id)

    def _later_audit(self, op_id: str, j: int) -> tuple[str, tuple[Any, ...]]:
        return self._insert_audit(op_id, j + 1)

    def _insert_audit(self, op_id: str, j: int) -> tuple[str, tuple[Any, ...]]:
        self.audit_seq += 1
        entry = self.audit[j % len(self.audit)]
        sql = "INSERT INTO audit_log VALUES (?, ?, ?, ?, ?)"
        return sql, (self.audit_seq, op_id, entry["entry"], entry["prev_hash"], entry["hash"])


def _spread(items: list[T], commits: int) -> list[list[T]]:
    """`items` in order, in `commits` parts as even as can be."""
    commits = max(1, commits)
    size, longer = divmod(len(items), commits)
    bounds = [k * size + min(k, longer) for k in range(commits + 1)]
    return [items[a:b] for a, b in itertools.pairwise(bounds)]


def raw_connection(path: Path) -> sqlite3.Connection:
    """The store's settings: WAL, synchronous=FULL, foreign keys on, explicit transactions."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


async def measure_raw(folder: Path, run: Run) -> tuple[float, float, int, int, float]:
    """(seconds, of which the submits' commits, rows written, commits, CPU seconds) for
    the raw loop, on the same schema."""
    db = folder / "raw.db"
    await (await SqliteStore.open(str(db))).close()  # the same schema, by the same migration
    batches, _ = RawWrites(folder / "ledger.db", run).statements()
    conn = raw_connection(db)
    cpu = time.process_time()
    before = conn.total_changes
    watch = Stopwatch()
    submits = 0.0
    # As many commits skip the wait for the disk as jobtrail's did, spread evenly over the
    # worker's part (jobtrail's relaxed commits are claims, releases and safe reads).
    relaxed, rest = run.commits - run.synced, max(1, len(batches) - run.submit_commits)
    synced_mode = True
    for i, batch in enumerate(batches):
        k = i - run.submit_commits
        sync = k < 0 or (k + 1) * relaxed // rest == k * relaxed // rest
        if sync is not synced_mode:
            conn.execute(f"PRAGMA synchronous = {'FULL' if sync else 'NORMAL'}")
            synced_mode = sync
        conn.execute("BEGIN IMMEDIATE")
        for sql, args in batch:
            conn.execute(sql, args)
        conn.execute("COMMIT")
        if i + 1 == run.submit_commits:
            submits = watch.seconds
    seconds = watch.seconds
    rows = conn.total_changes - before
    conn.close()
    return seconds, submits, rows, len(batches), time.process_time() - cpu


async def run(quick: bool) -> Report:
    n = 500 if quick else 4000
    report = Report("durable transitions (SQLite, synchronous=FULL)")
    with tempfile.TemporaryDirectory(prefix="jobtrail-bench-") as name:
        folder = Path(name)
        measured = await measure_jobtrail(folder, n)
        raw = await measure_raw(folder, measured)
        raw_seconds, raw_submits, raw_rows, raw_commits, raw_cpu = raw
    ok = measured.states.get("succeeded", 0)
    report.note(
        f"{n} operations, {ok} succeeded; jobtrail wrote {measured.changes} rows "
        f"({measured.changes / n:.1f} per operation) in {measured.commits} commits "
        f"({measured.submit_commits} of them submits; {measured.synced} waited for "
        f"the disk, the rest mirrored by the raw loop) in {measured.seconds:.2f}s "
        f"(submits {measured.submit_seconds:.2f}s)"
    )
    report.note(f"inserted {measured.inserts}; updated {measured.updates}")
    report.note(
        f"CPU per operation: jobtrail {1e3 * measured.cpu / n:.2f} ms (its store's writer "
        f"thread {1e3 * measured.writer_cpu / n:.2f} ms), raw loop {1e3 * raw_cpu / n:.2f} ms; "
        f"wall per operation {1e3 * measured.seconds / n:.2f} ms and {1e3 * raw_seconds / n:.2f} ms"
    )
    report.note(
        f"raw loop wrote {raw_rows} rows in {raw_commits} commits in {raw_seconds:.2f}s "
        f"(the {measured.submit_commits} submit commits {raw_submits:.2f}s): by phase, "
        f"submits {raw_submits / measured.submit_seconds:.2f}, worker "
        f"{(raw_seconds - raw_submits) / (measured.seconds - measured.submit_seconds):.2f} "
        "of the raw loop's speed"
    )
    figure = n / measured.seconds
    baseline = n / raw_seconds
    report.add(
        Figure(
            name="operations through their whole life",
            value=figure,
            unit="ops/s",
            baseline=baseline,
            baseline_name="raw sqlite3, same rows and commits",
            target="ratio >= 0.5",
            met=figure / baseline >= 0.5,
        )
    )
    report.add(
        Figure(
            name="rows written",
            value=measured.changes / measured.seconds,
            unit="rows/s",
            baseline=raw_rows / raw_seconds,
            baseline_name="raw sqlite3",
        )
    )
    return report
