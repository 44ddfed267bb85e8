"""Benchmark: `jobtrail worker --processes N` (issue 24, many cores). The same fixed set of
short jobs (create, two status reads, result) completed by one supervisor running 1 and then
2 worker processes (`worker --processes N --until-idle`, as an operator runs it), on a
SQLite ledger and on PostgreSQL, against the simulator in its own process.

The operations in flight are the same either way (TOTAL: one process at concurrency TOTAL,
two at TOTAL / 2 each), so what changes is the cores and the write lock, not the number of
calls waiting at once. The rate is operations completed per second over the ledger's active
window (first attempt to last transition, read from the ledger, so start-up is not counted).
Every operation must succeed with exactly its four calls. The figure is 2 processes over 1,
same run, same store, in turns (1, 2, 2, 1: the two rounds' ratios and their mean), with
the load average before each run.

What bounds the speed-up, sampled every SAMPLE seconds while the workers run (bench.cpu):
CPU seconds per operation of the supervisor itself, of its worker processes, and, on
PostgreSQL, of the server processes serving the benchmark's database; and on PostgreSQL
what those server processes wait on (pg_stat_activity's wait event: Lock, LWLock, IO,
Client...), so a lock wait shows as Lock samples.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import tempfile
import time
from datetime import datetime
from pathlib import Path

from bench.common import (
    ROOT,
    TOKEN,
    TOKEN_ENV,
    Figure,
    Report,
    fresh_pg_database,
    pg_available,
    simulator_process,
    use_token,
)
from bench.cpu import Sampler
from bench.multiworker import CALLS_PER_OPERATION, ledger_facts, submit

PROCESSES = (1, 2)
TOTAL = 100  # operations in flight, shared by the processes


def supervised(db: str, data: Path, processes: int) -> tuple[float, Sampler]:
    """`jobtrail worker --processes N --until-idle` to its end: its wall seconds, and what
    the sampler saw of its CPU (and of the PostgreSQL server's)."""
    jobtrail = str(ROOT / ".venv" / "bin" / "jobtrail")
    command = [jobtrail, "--db", db, "--data-dir", str(data), "worker", "--until-idle"]
    command += ["--concurrency", str(TOTAL // processes), "--processes", str(processes)]
    started = time.perf_counter()
    with subprocess.Popen(
        command,
        env=os.environ | {TOKEN_ENV: TOKEN},
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        sampler = Sampler(process.pid, db if db.startswith("postgresql://") else None)
        with sampler:
            _, err = process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"the supervisor failed:\n{err[-2000:]}")
    return time.perf_counter() - started, sampler


def sqlite_facts(db: str) -> dict[str, float]:
    with sqlite3.connect(db) as conn:
        succeeded, attempts, actors, first, last = conn.execute(
            "SELECT (SELECT count(*) FROM operations WHERE state = 'succeeded'), "
            "(SELECT count(*) FROM attempts), (SELECT count(DISTINCT actor) FROM attempts), "
            "(SELECT min(started_at) FROM attempts), (SELECT max(at) FROM transitions)"
        ).fetchone()
    window = (datetime.fromisoformat(last) - datetime.fromisoformat(first)).total_seconds()
    return {"succeeded": succeeded, "attempts": attempts, "actors": actors, "window": window}


def size(quick: bool) -> int:
    return 300 if quick else 1_500


async def run(quick: bool) -> Report:
    n = size(quick)
    report = Report(f"worker --processes 1 and 2 ({n:,} short jobs each)")
    use_token()
    stores = ["sqlite"] + ([] if pg_available() else ["postgresql"])
    with simulator_process() as url, tempfile.TemporaryDirectory(prefix="jobtrail-b-") as d:
        for store in stores:
            rates: dict[int, list[float]] = {count: [] for count in PROCESSES}
            for turn, count in enumerate((*PROCESSES, *reversed(PROCESSES))):
                if store == "sqlite":
                    db = str(Path(d) / f"ledger-{turn}.db")
                else:
                    db = fresh_pg_database("jobtrail_bench_processes")  # its own
                await submit(db, url, n)
                load = os.getloadavg()[0]
                wall, seen = await asyncio.to_thread(supervised, db, Path(d) / "data", count)
                facts = sqlite_facts(db) if store == "sqlite" else ledger_facts(db)
                rates[count].append(n / facts["window"])
                extra = facts["attempts"] - n * CALLS_PER_OPERATION
                report.note(
                    f"{store}, {count} process(es): {facts['succeeded']}/{n} succeeded, "
                    f"{extra} attempts beyond four per operation, by {facts['actors']} "
                    f"workers; active {facts['window']:.1f}s (wall {wall:.1f}s); "
                    f"{rates[count][-1]:.0f} operations/s (load {load:.2f}); "
                    f"{seen.describe(n)}"
                )
            ratios = [two / one for one, two in zip(rates[1], rates[2], strict=True)]
            report.add(
                Figure(
                    name=f"{store}: 2 worker processes under one supervisor (2 turns)",
                    value=sum(rates[2]) / 2,
                    unit="ops/s",
                    baseline=sum(rates[1]) / 2,
                    baseline_name="1 process, same run",
                    target=">= 1.6x on PostgreSQL (2 cores shared)",
                    met=min(ratios) >= 1.6 if store == "postgresql" else None,
                    notes=(f"ratio per turn {', '.join(f'{r:.2f}' for r in ratios)}",),
                )
            )
            report.note(
                f"{store}: 2 processes / 1 per turn: {', '.join(f'{r:.2f}' for r in ratios)}"
            )
    return report
