"""`python -m bench.workerproc`: one worker process (the real `Worker`, as `jobtrail worker`
assembles it) run for a fixed time, recording lateness; prints one JSON line of what it did:
claims, lateness percentiles after the warmup and its resident memory, sampled every half second."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import time
from datetime import timedelta

from jobtrail.services.runtime import runtime, settle_heap
from jobtrail.store.sqlite import SqliteStore
from jobtrail.worker import loop

from bench.common import percentile, rss_mb
from bench.diagnose import Diagnosis
from bench.writercpu import WriterCpu


async def work(args: argparse.Namespace) -> dict[str, float]:
    peak = 0.0
    async with runtime(
        args.db,
        args.data,
        worker_id="bench-worker",
        concurrency=args.concurrency,
        lease_for=timedelta(seconds=60),
        record_lateness=True,
    ) as rt:
        store = rt.ledger.store
        writer = WriterCpu(store) if isinstance(store, SqliteStore) else None
        traced = await _sqlite_settings(args, store)
        if args.judge_every_answer:  # the worker as it was before the seen-again fast path
            rt.runner.seen.previous = lambda op, kind: None  # type: ignore[method-assign]
        if not args.no_freeze:
            settle_heap()  # as `jobtrail worker` does after start-up
        diagnosis = Diagnosis() if args.diagnose else None
        if diagnosis is not None:
            sqlite_path = None if args.db.startswith("postgresql://") else args.db
            diagnosis.install(rt.ledger, store, sqlite_path)
        warming = True
        task = asyncio.create_task(rt.worker.run())
        started = time.monotonic()
        ready = rt.worker.stats.claimed
        cpu = time.process_time()
        writer_cpu = writer.seconds if writer else 0.0
        first = 0  # lateness is counted after the warmup
        statements = traced[0]
        tick = 0.5 if args.polls is None else 0.005
        while time.monotonic() - started < args.seconds and not task.done():
            await asyncio.sleep(tick)
            if args.polls is not None and rt.worker.stats.claimed >= args.polls:
                break
            peak = max(peak, rss_mb()[0])
            if time.monotonic() - started < args.warmup:
                ready = rt.worker.stats.claimed
                cpu = time.process_time()
                writer_cpu = writer.seconds if writer else 0.0
                first = len(rt.worker.stats.lateness)
                statements = traced[0]
            elif warming:
                warming = False
                if diagnosis is not None:
                    diagnosis.reset()
        measured = time.monotonic() - started - args.warmup
        cpu = time.process_time() - cpu
        writer_cpu = (writer.seconds if writer else float("nan")) - writer_cpu
        claimed = rt.worker.stats.claimed - ready
        statements = traced[0] - statements
        rt.worker.stop.set()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        stats = rt.worker.stats
        found = diagnosis.figures() if diagnosis is not None else {}
        if diagnosis is not None:
            diagnosis.remove()
    late = stats.lateness[first:]
    rss, hwm = rss_mb()
    return {
        "claimed": stats.claimed,
        "claimed_measured": claimed,
        "measured_seconds": measured,
        # CPU of the whole process (event loop and the store's writer thread) over the
        # measured claims: steadier than a rate on a shared machine
        "cpu_ms_per_claim": 1000 * cpu / claimed if claimed else float("nan"),
        # of it, the SQLite store's writer thread (statements, commits, their fsyncs' CPU);
        # the rest is the event loop's thread (HTTP, the core, the ledger, encoding)
        "writer_cpu_ms_per_claim": 1000 * writer_cpu / claimed if claimed else float("nan"),
        "statements_per_claim": statements / claimed if claimed else float("nan"),
        "finished": stats.finished,
        "lost": stats.lost,
        "late_count": len(late),
        "late_p50": percentile(late, 50),
        "late_p90": percentile(late, 90),
        "late_p99": percentile(late, 99),
        "late_max": max(late, default=float("nan")),
        "rss_mb": rss,
        "rss_peak_mb": max(peak, hwm),
        **found,
    }


async def _sqlite_settings(args: argparse.Namespace, store: object) -> list[int]:
    """The experiments' settings of a SQLite store's connection; the statements counter."""
    traced = [0]
    if not isinstance(store, SqliteStore):
        return traced
    if args.wal_autocheckpoint is not None:
        pages = args.wal_autocheckpoint
        await store._call(store._conn.execute, f"PRAGMA wal_autocheckpoint = {pages:d}")
    if args.count_statements:
        store._conn.set_trace_callback(lambda _sql: traced.__setitem__(0, traced[0] + 1))
    return traced


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--warmup", type=float, default=0.0)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--no-freeze", action="store_true", help="skip gc.freeze()")
    parser.add_argument("--count-statements", action="store_true")
    parser.add_argument(
        "--wal-autocheckpoint",
        type=int,
        help="SQLite: the writer's wal_autocheckpoint in pages (0: none), for an experiment",
    )
    parser.add_argument(
        "--busy-poll",
        type=float,
        help="seconds between looks for due work while steps are in flight (an experiment)",
    )
    parser.add_argument(
        "--diagnose", action="store_true", help="time the loop, GC, claims, transactions"
    )
    parser.add_argument("--polls", type=int, help="stop after this many claims (bench.floor)")
    parser.add_argument(
        "--judge-every-answer",
        action="store_true",
        help="no seen-again fast path: every status answer decoded and judged (bench.floor_same)",
    )
    args = parser.parse_args()
    if args.busy_poll is not None:
        loop.BUSY_POLL = args.busy_poll
    print(json.dumps(asyncio.run(work(args))), flush=True)


if __name__ == "__main__":
    main()
