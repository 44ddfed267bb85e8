"""Benchmark 3, scale: 100,000 operations observing at once, on SQLite and on PostgreSQL.

For each store: one worker process (bench.workerproc, the real Worker) polls 100,000
never-finishing simulator jobs whose next poll times are spread evenly over one poll
period, so the offered load is 100,000 / period status calls per second. Measured: the
worker's resident memory (peak), the lateness of its claims against the stored next poll
time (p50/p99/max), and the poll rate it sustained. Then 900,000 ended operations join
the table (1,000,000 rows) and the claim query's plan and cost are measured (bench.claims).
"""

from __future__ import annotations

import asyncio
import sqlite3
import statistics
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from jobtrail.providers.file.config import ProviderSpec, parse_provider
from jobtrail.store import open_store
from jobtrail.store.sqlite import SqliteStore

from bench import claims, seed
from bench.common import (
    Figure,
    Report,
    fresh_pg_database,
    pg_available,
    provider_doc,
    simulator_process,
    use_token,
)
from bench.polling import run_worker

CONCURRENCY = 100
LEAD = 20.0  # seconds between seeding's start and the first due time: seeding, worker start
RSS_TARGET_MB = 300
LATE_TARGET_S = 1.0


async def observe(
    report: Report, kind: str, db: str, spec: ProviderSpec, jobs: list[str], period: float
) -> None:
    """Seed the live operations, run one worker over one poll period, report."""
    n = len(jobs)
    first_due = seed.now() + timedelta(seconds=LEAD)
    launched = time.monotonic()
    rows = seed.rows(seed.codec_for(db), seed.template(spec, seed.now()), jobs,
                     seed.spread(first_due, period, n), count=n, seed=1)  # fmt: skip
    await asyncio.to_thread(seed.insert, db, rows)
    seeded = time.monotonic() - launched
    with tempfile.TemporaryDirectory(prefix="jobtrail-bench-") as data:
        warmup = max(0.0, LEAD - seeded) + 2.0
        worker = await asyncio.to_thread(
            run_worker, db, Path(data), warmup + period, warmup, CONCURRENCY
        )
    rate = worker["claimed_measured"] / worker["measured_seconds"]
    report.note(
        f"{kind}: {n} operations seeded in {seeded:.1f}s; worker claimed {worker['claimed']} "
        f"({rate:.0f}/s over {worker['measured_seconds']:.0f}s, offered {n / period:.0f}/s), "
        f"lateness p50 {worker['late_p50']:.3f}s p90 {worker['late_p90']:.3f}s "
        f"p99 {worker['late_p99']:.3f}s max {worker['late_max']:.3f}s over "
        f"{worker['late_count']} claims; RSS {worker['rss_mb']:.0f} MB at the end, "
        f"peak {worker['rss_peak_mb']:.0f} MB"
    )
    report.add(
        Figure(
            name=f"{kind}: worker resident memory, {n} observing",
            value=worker["rss_peak_mb"],
            unit="MB",
            target=f"< {RSS_TARGET_MB} MB",
            met=worker["rss_peak_mb"] < RSS_TARGET_MB,
        )
    )
    report.add(
        Figure(
            name=f"{kind}: p99 poll lateness at {n / period:.0f} polls/s offered",
            value=worker["late_p99"],
            unit="s",
            target=f"< {LATE_TARGET_S:g} s",
            met=worker["late_p99"] < LATE_TARGET_S,
        )
    )
    report.add(
        Figure(
            name=f"{kind}: polls sustained",
            value=rate,
            unit="polls/s",
            baseline=n / period,
            baseline_name="offered load",
        )
    )


async def claim_cost_sqlite(report: Report, db: str, ended: int, repeat: int) -> None:
    await asyncio.to_thread(seed.insert, db, _ended_rows(db, ended))
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE operations SET lease_owner = NULL, lease_expires_at = NULL, "
            "next_poll_at = updated_at WHERE next_poll_at IS NOT NULL"
        )
        total = conn.execute("SELECT count(*) FROM operations").fetchone()[0]
        conn.execute("ANALYZE")
    now = seed.now()
    report.note(f"sqlite: {total} rows; EXPLAIN QUERY PLAN of the claim's select:")
    report.note("  " + claims.sqlite_plan(db, now).replace("\n", "\n  "))
    store = await SqliteStore.open(db)
    times, claimed = [], 0
    try:
        for _ in range(repeat):
            started = time.perf_counter()
            claimed = len(await store.claim_due("bench", now, 100, timedelta(minutes=5)))
            times.append((time.perf_counter() - started) * 1000)
    finally:
        await store.close()
    report.add(
        Figure(
            name=f"sqlite: claim of {claimed} due rows among {total}",
            value=statistics.median(times),
            unit="ms",
            target="uses the due index",
            met="operations_due" in claims.sqlite_plan(db, now),
            notes=("store.claim_due, committed (synchronous=FULL)",),
        )
    )


async def claim_cost_postgres(report: Report, db: str, live: int, ended: int, repeat: int) -> None:
    await asyncio.to_thread(seed.insert, db, _ended_rows(db, ended))
    now = seed.now()
    args: dict[str, object] = {
        "now": now,
        "limit": 100,
        "owner": "bench",
        "expires": now + timedelta(minutes=5),
        "lease_s": 300.0,  # the lease's length on the server's clock (migration 0012)
        "only": None,
    }
    results: dict[str, tuple[float, int]] = {}
    few, many = live // 100, live // 10  # operations in flight with other workers
    for shape, leased in (("A", 0), ("A", many), ("B", 0), ("B", few), ("B", many)):
        await asyncio.to_thread(claims.pg_lease_some, db, leased, now, shape)
        query = claims.CLAIM_A if shape == "A" else claims.CLAIM_B
        results[f"{shape}{leased}"] = await asyncio.to_thread(
            claims.pg_claim_ms, db, query, args, repeat
        )
        if leased == many:
            plan = await asyncio.to_thread(claims.pg_explain, db, query, args)
            report.note(f"postgres: EXPLAIN (ANALYZE, BUFFERS), claim {shape}, {leased} leased:")
            report.note("  " + plan.replace("\n", "\n  "))
    for leased in (0, few, many):
        # A does not depend on leases (they sit outside its due range): measured at 0 and many
        a_ms, a_rows = results["A0" if leased == 0 else f"A{many}"]
        b_ms, b_rows = results[f"B{leased}"]
        report.add(
            Figure(
                name=f"postgres: claim of {a_rows} rows, A (ours) vs B with {leased:,} leased",
                value=a_ms,
                unit="ms",
                baseline=b_ms,
                baseline_name=f"B: lease filter, claimed {b_rows}",
                higher_is_better=False,
            )
        )
    report.note(
        f"postgres: A claims {results['A0'][1]} rows in {results['A0'][0]:.2f} ms with none "
        f"leased, {results[f'A{many}'][0]:.2f} ms with {many:,} leased elsewhere (each claim "
        f"rolled back; {live + ended:,} rows in the table)"
    )


def _ended_rows(db: str, count: int) -> Any:
    codec = seed.codec_for(db)
    base = seed.template(parse_provider(provider_doc("http://127.0.0.1:1")), seed.now())
    return seed.rows(codec, base, None, seed.never(), count=count, seed=2, ended=True)


async def run(quick: bool) -> Report:
    n, period, ended = (10_000, 20.0, 90_000) if quick else (100_000, 200.0, 900_000)
    report = Report(f"scale ({n:,} observing; claim cost at {n + ended:,} rows)")
    use_token()
    with simulator_process() as url:
        jobs = await seed.create_sim_jobs(url, n, {"never_finish": True})
        every = f"{period:g}s"
        spec = parse_provider(provider_doc(url, poll_initial=every, poll_cap=every))
        with tempfile.TemporaryDirectory(prefix="jobtrail-bench-") as folder:
            db = str(Path(folder) / "ledger.db")
            await (await open_store(db)).close()
            await observe(report, "sqlite", db, spec, jobs, period)
            await claim_cost_sqlite(report, db, ended, repeat=20)
        problem = pg_available()
        if problem:
            report.note(f"postgres: not measured, the server is unreachable ({problem})")
            return report
        url_pg = fresh_pg_database()
        await (await open_store(url_pg)).close()
        await observe(report, "postgres", url_pg, spec, jobs, period)
        await claim_cost_postgres(report, url_pg, n, ended, repeat=20)
    return report
