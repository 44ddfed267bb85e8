"""Benchmark 3, scale: N operations observing at once (10,000 and then 100,000), on SQLite
and on PostgreSQL.

For each store and N: one worker process (bench.workerproc, the real Worker) polls N
never-finishing simulator jobs whose next poll times are spread evenly over one poll
period, the period growing with N so the offered load stays RATE status calls per second:
what changes between the sizes is N alone. Measured: the worker's resident memory (peak),
the lateness of its claims against the stored next poll time (p50/p99/max), the poll rate it
sustained, the load average, and where lateness comes from, from the worker's own timings
(bench.diagnose: event-loop stalls, GC pauses by generation, claim times, SQLite
transaction times and WAL resets). Then 900,000 ended operations join the table (1,000,000
rows) and the claim query's plan and cost are measured (bench.claims).
JOBTRAIL_BENCH_SCALE_N (a comma-separated list) overrides the sizes.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import statistics
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg

from jobtrail.providers.file.config import ProviderSpec, parse_provider
from jobtrail.store import open_store
from jobtrail.store.sqlite import SqliteStore

from bench import claimcount, claims, seed
from bench.common import (
    Figure,
    Report,
    fresh_pg_database,
    pg_available,
    provider_doc,
    simulator_process,
    use_token,
)
from bench.diagnose import TICK
from bench.polling import run_worker

CONCURRENCY = 100
RATE = 500.0  # status calls per second offered, whatever N
LEAD = 20.0  # seconds between seeding's start and the first due time: seeding, worker start
RSS_TARGET_MB = 300
LATE_TARGET_S = 1.0


async def observe(
    report: Report,
    kind: str,
    db: str,
    spec: ProviderSpec,
    jobs: list[str],
    period: float,
    window: float | None = None,
) -> None:
    """Seed the live operations, run one worker over one poll period (or the first `window`
    seconds of it), report."""
    n = len(jobs)
    first_due = seed.now() + timedelta(seconds=LEAD)
    launched = time.monotonic()
    rows = seed.rows(seed.codec_for(db), seed.template(spec, seed.now()), jobs,
                     seed.spread(first_due, period, n), count=n, seed=1)  # fmt: skip
    await asyncio.to_thread(seed.insert, db, rows)
    seeded = time.monotonic() - launched
    with tempfile.TemporaryDirectory(prefix="jobtrail-bench-") as data:
        warmup = max(0.0, LEAD - seeded) + 2.0
        vacuum = pg_vacuum_stats(db) if kind == "postgres" else None
        load = os.getloadavg()
        worker = await asyncio.to_thread(
            run_worker,
            db,
            Path(data),
            warmup + min(period, window or period),
            warmup,
            CONCURRENCY,
            None,
            ["--diagnose"],
        )
        load_end = os.getloadavg()
    rate = worker["claimed_measured"] / worker["measured_seconds"]
    report.note(
        f"{kind}, N={n:,} (load {load[0]:.2f} at the start, {load_end[0]:.2f} / "
        f"{load_end[1]:.2f} 1- and 5-min at the end): {n} operations seeded in {seeded:.1f}s; "
        f"worker claimed {worker['claimed']} "
        f"({rate:.0f}/s over {worker['measured_seconds']:.0f}s, offered {n / period:.0f}/s), "
        f"lateness p50 {worker['late_p50']:.3f}s p90 {worker['late_p90']:.3f}s "
        f"p99 {worker['late_p99']:.3f}s max {worker['late_max']:.3f}s over "
        f"{worker['late_count']} claims; worker CPU {worker['cpu_ms_per_claim']:.2f} ms per "
        f"poll; RSS {worker['rss_mb']:.0f} MB at the end, "
        f"peak {worker['rss_peak_mb']:.0f} MB"
    )
    report.note(f"{kind}, N={n:,}: where lateness comes from: " + diagnosis_text(worker))
    if vacuum is not None:
        after = pg_vacuum_stats(db)
        plan = await asyncio.to_thread(claimcount.pg_explain, db, analyze=False)
        report.note(
            f"{kind}, N={n:,}: operations table over the run: "
            + ", ".join(f"{k} {after[k] - vacuum[k]:+}" for k in vacuum if k != "n_dead_tup")
            + f"; dead tuples at the end {after['n_dead_tup']}; a claim of "
            f"{claimcount.BATCH} then (EXPLAIN ANALYZE, rolled back): {plan['buffers']} "
            f"buffers, {plan['ms']:.1f} ms; {plan['due_scan']}"
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
            name=f"{kind}: p99 poll lateness, {n:,} observing, {n / period:.0f} polls/s offered",
            value=worker["late_p99"],
            unit="s",
            target=f"< {LATE_TARGET_S:g} s",
            met=worker["late_p99"] < LATE_TARGET_S,
        )
    )
    report.add(
        Figure(
            name=f"{kind}: polls sustained, {n:,} observing",
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


def pg_vacuum_stats(url: str) -> dict[str, int]:
    """The operations table's update and vacuum counters (pg_stat_user_tables)."""
    keys = ("n_tup_upd", "n_tup_hot_upd", "n_dead_tup", "autovacuum_count", "autoanalyze_count")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_force_next_flush()")
        row = conn.execute(
            f"SELECT {', '.join(keys)} FROM pg_stat_user_tables WHERE relname = 'operations'"
        ).fetchone()
    return dict(zip(keys, (int(v or 0) for v in row or ()), strict=False))


def diagnosis_text(w: dict[str, Any]) -> str:
    """bench.diagnose's figures, in ms, on one line."""

    def ms(name: str) -> str:
        return f"p50 {1000 * w[name + '_p50']:.1f} p99 {1000 * w[name + '_p99']:.1f} max " \
            f"{1000 * w[name + '_max']:.0f}"  # fmt: skip

    parts = [
        f"event-loop stalls (a {1000 * TICK:.0f} ms ticker's overshoot) {ms('loop_lag')} ms",
        f"claims {w['claim_count']} ({w['claim_rows_mean']:.1f} rows each) {ms('claim')} ms",
    ]
    for g in (0, 1, 2):
        parts.append(
            f"GC gen {g}: {w[f'gc{g}_count']} pauses, {1000 * w[f'gc{g}_total_s']:.0f} ms in "
            f"all, max {1000 * w[f'gc{g}_max']:.1f} ms (CPU {1000 * w[f'gc{g}_cpu_s']:.0f} ms, "
            f"max {1000 * w[f'gc{g}_cpu_max']:.1f} ms)"
        )
    if "pool_requests" in w:
        parts.append(
            f"pool: {w['pool_requests']} requests, {w['pool_queued']} queued for a connection, "
            f"{w['pool_wait_ms'] / max(1, w['pool_queued']):.1f} ms waited per queued request "
            f"({w['pool_size']} connections)"
        )
    if "transaction_count" in w:
        parts.append(
            f"SQLite transactions {w['transaction_count']} on the writer thread "
            f"{ms('transaction')} ms (CPU {ms('transaction_cpu')} ms), "
            f"{w['transactions_over_100ms']} over 100 ms, "
            f"WAL resets {w.get('wal_resets', '?')}"
        )
    return "; ".join(parts)


def _ended_rows(db: str, count: int) -> Any:
    codec = seed.codec_for(db)
    base = seed.template(parse_provider(provider_doc("http://127.0.0.1:1")), seed.now())
    return seed.rows(codec, base, None, seed.never(), count=count, seed=2, ended=True)


def sizes(quick: bool) -> list[int]:
    given = os.environ.get("JOBTRAIL_BENCH_SCALE_N")
    if given:
        return [int(size) for size in given.split(",")]
    return [1_000, 10_000] if quick else [10_000, 100_000]


async def run(quick: bool) -> Report:
    ns = sizes(quick)
    n, ended = max(ns), (90_000 if quick else 900_000)
    report = Report(f"scale ({', '.join(f'{size:,}' for size in ns)} observing at {RATE:g} "
                    f"polls/s offered; claim cost at {n + ended:,} rows)")  # fmt: skip
    use_token()
    problem = pg_available()
    with simulator_process() as url:
        jobs = await seed.create_sim_jobs(url, n, {"never_finish": True})
        for size in ns:
            period = size / RATE
            every = f"{period:g}s"
            spec = parse_provider(provider_doc(url, poll_initial=every, poll_cap=every))
            with tempfile.TemporaryDirectory(prefix="jobtrail-bench-") as folder:
                db = str(Path(folder) / "ledger.db")
                await (await open_store(db)).close()
                await observe(report, "sqlite", db, spec, jobs[:size], period)
                if size == n:
                    await claim_cost_sqlite(report, db, ended, repeat=20)
            if problem:
                continue
            url_pg = fresh_pg_database()
            await (await open_store(url_pg)).close()
            await observe(report, "postgres", url_pg, spec, jobs[:size], period)
            if size == n:
                await claim_cost_postgres(report, url_pg, n, ended, repeat=20)
        if problem:
            report.note(f"postgres: not measured, the server is unreachable ({problem})")
    return report
