"""Benchmark 4, multi-worker: 1, 2 and 4 worker processes (`jobtrail --db postgresql://...
worker --until-idle`, as an operator runs them) completing the same fixed set of short jobs
(create, two status reads, result) on PostgreSQL, against the simulator in its own process.

The rate is operations completed per second over the ledger's active window (first attempt
to last transition, from the ledger itself, so process start-up is not counted); the wall
time including start-up is shown too. Every operation must succeed with exactly its four
calls: a second worker doing the same step twice would show as extra attempts.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg

from jobtrail.ledger import Ledger
from jobtrail.providers.file.config import parse_provider
from jobtrail.store import open_store

from bench.common import (
    ROOT,
    TOKEN,
    TOKEN_ENV,
    Figure,
    Report,
    fresh_pg_database,
    pg_available,
    provider_doc,
    simulator_process,
    use_token,
)

WORKERS = (1, 2, 4)
CONCURRENCY = 50  # each worker's
CALLS_PER_OPERATION = 4  # create, status (running), status (succeeded), result


async def submit(db: str, url: str, n: int) -> None:
    spec = parse_provider(provider_doc(url, poll_initial="50ms", poll_cap="200ms"))
    store = await open_store(db)
    ledger = Ledger(store)
    try:
        queue = iter(range(n))

        async def submitter() -> None:
            for i in queue:
                body = {"report": "daily", "n": i, "_sim": {"duration_polls": 2}}
                await ledger.submit(spec, body, actor="bench")

        await asyncio.gather(*(submitter() for _ in range(20)))
    finally:
        await store.close()


def run_workers(db: str, data: Path, count: int) -> tuple[float, str]:
    """Start `count` worker processes together: (seconds until the last one exits, what
    they logged about failed steps)."""
    jobtrail = str(ROOT / ".venv" / "bin" / "jobtrail")
    command = [jobtrail, "--db", db, "--data-dir", str(data), "worker", "--until-idle"]
    command += ["--concurrency", str(CONCURRENCY)]
    env = os.environ | {TOKEN_ENV: TOKEN}
    started = time.perf_counter()
    processes = [
        subprocess.Popen([*command, "--worker-id", f"bench-{i}"], env=env, cwd=ROOT,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for i in range(count)
    ]  # fmt: skip
    trouble = []
    for process in processes:
        _, err = process.communicate()
        if process.returncode != 0:
            raise RuntimeError(f"a worker failed:\n{err[-2000:]}")
        if "Traceback" in err or "failed" in err:
            trouble.append(err[-1500:])
    return time.perf_counter() - started, "\n".join(trouble)


def ledger_facts(db: str) -> dict[str, float]:
    with psycopg.connect(db) as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM operations WHERE state = 'succeeded'), "
            "(SELECT count(*) FROM attempts), "
            "(SELECT count(DISTINCT actor) FROM attempts), "
            "extract(epoch FROM (SELECT max(at) FROM transitions) - "
            "(SELECT min(started_at) FROM attempts))"
        ).fetchone()
    assert row is not None
    succeeded, attempts, actors, window = row
    return {
        "succeeded": succeeded,
        "attempts": attempts,
        "actors": actors,
        "window": float(window),
    }


def why(db: str) -> str:
    """What the attempts and states were, when something other than the plain path ran."""
    with psycopg.connect(db) as conn:
        attempts = conn.execute(
            "SELECT kind, outcome, count(*) FROM attempts GROUP BY 1, 2 ORDER BY 1, 2"
        ).fetchall()
        states = conn.execute("SELECT state, count(*) FROM operations GROUP BY 1").fetchall()
    return f"attempts {attempts}; states {states}"


async def run(quick: bool) -> Report:
    n = 400 if quick else 2_000
    report = Report(f"multi-worker on PostgreSQL ({n:,} short jobs)")
    problem = pg_available()
    if problem:
        report.note(f"not measured: PostgreSQL is unreachable ({problem})")
        return report
    use_token()
    rates: dict[int, float] = {}
    with simulator_process() as url, tempfile.TemporaryDirectory(prefix="jobtrail-b-") as data:
        for count in WORKERS:
            db = fresh_pg_database()
            await submit(db, url, n)
            wall, trouble = await asyncio.to_thread(run_workers, db, Path(data), count)
            facts = ledger_facts(db)
            rates[count] = n / facts["window"]
            extra = facts["attempts"] - n * CALLS_PER_OPERATION
            report.note(
                f"{count} worker(s): {facts['succeeded']}/{n} succeeded, "
                f"{facts['attempts']} attempts ({extra} beyond four per operation) by "
                f"{facts['actors']} workers; active {facts['window']:.1f}s, wall {wall:.1f}s "
                f"with start-up; {rates[count]:.0f} operations/s"
            )
            if facts["succeeded"] != n or extra:
                report.note(f"{count} worker(s): NOT every operation ran exactly once: {why(db)}")
                report.note(f"the workers logged: {trouble or 'nothing'}")
    for count in WORKERS:
        report.add(
            Figure(
                name=f"{count} worker process(es): operations completed",
                value=rates[count],
                unit="ops/s",
                baseline=rates[1],
                baseline_name="1 worker",
                target="scaling (2 cores: reported as measured)",
            )
        )
    return report
