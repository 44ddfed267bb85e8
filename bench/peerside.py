"""`python -m bench.peerside SIDE ...`: one side of a peer benchmark, alone in its process,
printing one JSON line: its lifecycles per second, the growth of its store by table, and, on
PostgreSQL, the transactions its database committed and the server's WAL syncs in the window.

A side is an async function `(url, n, where, marks)`: it sets itself up, calls
`marks.start()` (the empty store is measured then and the clock starts), runs `n` create →
poll → collect lifecycles against the simulator at `url`, calls `marks.stop()`, and tears
down; its store is measured after that. `marks` also calls `os.getppid()` at start and stop,
a system call nothing else here makes, so a tracer (bench.peers runs the side under
`strace -f`) can count the fsyncs between the two marks and leave set-up and teardown out.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from bench import peerbytes
from bench.common import provider_doc, use_token

CONCURRENCY = 50
EVERY = "10ms"
TERMINAL = ("succeeded", "failed", "cancelled")


@dataclass
class Where:
    """Where a side stores: `store` is "sqlite" (files under `folder`) or "postgres" (the
    database `pg`, result files, if any, under `folder`); `journal` is DBOS's SQLite mode."""

    store: str
    folder: Path
    pg: str = ""
    journal: str = "default"

    def measure(self, *extra: Path, db: Path | None = None) -> dict[str, int]:
        if self.store == "postgres":
            return peerbytes.pg_tables(self.pg, *extra)
        assert db is not None
        return peerbytes.sqlite_tables(db, *extra)


@dataclass
class Marks:
    """The measured window: the clock, and the store measured empty at its start."""

    where: Where
    measure_empty: Callable[[], dict[str, int]]
    started: float = 0.0
    seconds: float = 0.0
    empty: dict[str, int] = field(default_factory=dict)
    pg_before: dict[str, int] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)

    def start(self) -> None:
        self.empty = self.measure_empty()
        if self.where.store == "postgres":
            self.pg_before = pg_counters(self.where.pg)
        os.getppid()  # the tracer's start mark
        self.started = time.perf_counter()

    def stop(self) -> None:
        self.seconds = time.perf_counter() - self.started
        os.getppid()  # the tracer's stop mark


def pg_counters(url: str) -> dict[str, int]:
    """This database's committed transactions and the server's WAL syncs and bytes so far
    (the server's figures count every database's sessions, other users' included)."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT d.xact_commit, w.wal_sync, w.wal_bytes FROM pg_stat_database d, pg_stat_wal w "
            "WHERE d.datname = current_database()"
        ).fetchone()
    assert row is not None
    return {"xact_commit": int(row[0]), "wal_sync": int(row[1]), "wal_bytes": int(row[2])}


def body(i: int) -> dict[str, Any]:
    return {"account": f"acct_{i % 97}", "format": "csv", "n": i}


# -- jobtrail --------------------------------------------------------------------------------


async def jobtrail_side(url: str, n: int, where: Where, marks: Marks) -> None:
    """`Ledger.submit` by 50 submitters, then the real worker until idle; results as
    content-addressed files (written and fsynced with their directory)."""
    from jobtrail.core.states import State
    from jobtrail.providers.file.config import parse_provider
    from jobtrail.services.runtime import runtime

    use_token()
    db = where.folder / "jobtrail.db"
    data = where.folder / "jobtrail-data"
    ledger = where.pg if where.store == "postgres" else str(db)
    marks.measure_empty = lambda: where.measure(data, db=db)
    spec = parse_provider(provider_doc(url, poll_initial=EVERY, poll_cap=EVERY))
    async with runtime(ledger, data, worker_id="bench-worker", concurrency=CONCURRENCY) as rt:
        marks.start()
        queue = iter(range(n))

        async def submitter() -> None:
            for i in queue:
                await rt.ledger.submit(spec, body(i), actor="bench")

        await asyncio.gather(*(submitter() for _ in range(CONCURRENCY)))
        await rt.worker.run(until_idle=True)
        marks.stop()
        ended = await rt.ledger.store.list_operations(states=[State.SUCCEEDED], limit=n + 1)
    assert len(ended) == n, f"{len(ended)} of {n} jobtrail operations succeeded"
    files = sum(1 for p in data.rglob("*") if p.is_file()) if data.exists() else 0
    assert files == n, f"{files} result files for {n} operations: results not distinct?"
    marks.facts["results"] = files


async def jobtrail_packed_side(url: str, n: int, where: Where, marks: Marks) -> None:
    """`jobtrail_side`, then every finished operation packed (`prune --pack-after`, after
    the measured window: its CPU per operation is reported), the chain verified, and a
    SQLite ledger VACUUMed (the pages packing freed are reused by new rows; a PostgreSQL
    ledger is measured after VACUUM FULL anyway)."""
    from datetime import timedelta

    from jobtrail.core.audit import verify
    from jobtrail.services.runtime import runtime

    await jobtrail_side(url, n, where, marks)
    db = where.folder / "jobtrail.db"
    ledger = where.pg if where.store == "postgres" else str(db)
    await asyncio.sleep(0.01)  # every operation finished more than the age below ago
    async with runtime(ledger, where.folder / "jobtrail-data", worker_id="bench-pack") as rt:
        cpu, wall = time.process_time(), time.perf_counter()
        batches = await rt.ledger.pack(timedelta(milliseconds=5), actor="bench")
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        packed = sum(len(b.operations) for b in batches)
        assert packed == n, f"{packed} of {n} operations packed"
        assert verify(await rt.ledger.audit_rows(), None).ok
        assert await rt.ledger.edited_rows() == []
        # Not one row left behind (a PostgreSQL VACUUM FULL still counts deleted rows while
        # another session's snapshot may see them: a shared server can inflate the figure).
        assert await rt.ledger.store.list_operations(limit=n + 1) == []
        dictionaries = await rt.ledger.store.pack_dictionaries()
    marks.facts |= {
        "packed": packed,
        "pack_cpu_ms_per_op": 1000 * cpu / n,
        "pack_wall_ms_per_op": 1000 * wall / n,
        "dictionary_bytes": sum(len(d.data) for d in dictionaries.values()),
    }
    if where.store == "sqlite":
        import sqlite3

        conn = sqlite3.connect(db)
        try:
            conn.execute("VACUUM")
        finally:
            conn.close()


def sides() -> dict[str, Callable[[str, int, Where, Marks], Awaitable[None]]]:
    from bench.peer_dbos import dbos_side
    from bench.peer_procrastinate import procrastinate_side

    return {
        "jobtrail": jobtrail_side,
        "jobtrail-packed": jobtrail_packed_side,
        "dbos": dbos_side,
        "procrastinate": procrastinate_side,
    }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    where = Where(store=args.store, folder=Path(args.folder), pg=args.pg, journal=args.journal)
    where.folder.mkdir(parents=True, exist_ok=True)
    marks = Marks(where=where, measure_empty=dict)
    await sides()[args.side](args.url, args.n, where, marks)
    counters: dict[str, int] = {}
    if args.store == "postgres":
        # before the VACUUM FULL below, whose rewrite would count as the side's WAL
        await asyncio.sleep(1.0)  # backends report their counters when idle or gone
        now = pg_counters(args.pg)
        counters = {k: now[k] - marks.pg_before.get(k, 0) for k in now}
    jobtrail = args.side.startswith("jobtrail")
    db = where.folder / ("jobtrail.db" if jobtrail else f"{args.side}.db")
    extra = [where.folder / "jobtrail-data"] if jobtrail else []
    after = where.measure(*extra, db=db)
    out: dict[str, Any] = {
        "side": args.side,
        "pid": os.getpid(),
        "store": args.store,
        "n": args.n,
        "seconds": marks.seconds,
        "ops_per_s": args.n / marks.seconds if marks.seconds else 0.0,
        "bytes": peerbytes.grown(after, marks.empty),
        **marks.facts,
    }
    out["bytes_per_op"] = peerbytes.stored(out["bytes"]) / args.n if args.n else 0.0
    if counters:
        out["pg"] = counters
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("side", choices=tuple(sides()))
    parser.add_argument("--url", required=True, help="the simulator's base URL")
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--folder", required=True)
    parser.add_argument("--pg", default="", help="the side's PostgreSQL database URL")
    parser.add_argument("--journal", choices=("default", "wal"), default="default")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main_async(args))), flush=True)


if __name__ == "__main__":
    main()
