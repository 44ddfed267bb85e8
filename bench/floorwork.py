"""`python -m bench.floorwork --child KIND --units N`: one side of `bench floor` in a process
of its own: a bare GET loop, the floor's unchanged poll, the floor's lifecycle or jobtrail's
lifecycle, bounded by a count of units; prints one JSON line (units done, CPU and wall clock).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import itertools
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import TOKEN_ENV

CONCURRENCY = 50  # the worker's default, as bench.polling

# -- the children: each kind of work, bounded by a count -----------------------------------


class SeenWriter:
    """The floor's store for polls: an answer equal to its job's previous one is "seen again
    at T", one row update; every update of a group in one `executemany`, one commit."""

    def __init__(self, store: Path) -> None:
        self.conn = floor_connection(store, synchronous="NORMAL")
        self.previous: dict[str, bytes] = {}
        self.seen: list[tuple[float, str]] = []
        self.changed: list[tuple[bytes, float, str]] = []
        self.wake = asyncio.Event()
        self.lock = threading.Lock()  # a commit still running in its thread finishes first

    def record(self, job: str, body: bytes) -> None:
        if body == self.previous.get(job):
            self.seen.append((time.time(), job))
        else:
            self.previous[job] = body
            self.changed.append((body, time.time(), job))
        self.wake.set()

    def commit(self, seen: list[tuple[float, str]], new: list[tuple[bytes, float, str]]) -> None:
        with self.lock:
            self.conn.execute("BEGIN IMMEDIATE")
            self.conn.executemany("UPDATE seen SET at = ?, count = count + 1 WHERE job = ?", seen)
            if new:
                self.conn.executemany("UPDATE seen SET answer = ?, at = ? WHERE job = ?", new)
            self.conn.execute("COMMIT")

    def close(self) -> None:
        with self.lock:
            self.conn.close()

    async def run(self) -> None:
        while True:
            await self.wake.wait()
            self.wake.clear()
            seen, new = self.seen, self.changed
            self.seen, self.changed = [], []
            await asyncio.to_thread(self.commit, seen, new)


async def poll_loop(url: str, jobs: list[str], units: int, *, store: Path | None) -> int:
    """`units` status GETs by CONCURRENCY loops; with `store`, each answer compared with the
    previous one for its job and "seen again" written in group commits. Returns GETs done."""
    import aiohttp

    cycle = itertools.cycle(jobs)
    done = 0
    writer = SeenWriter(store) if store is not None else None
    headers = {"Authorization": f"Bearer {os.environ[TOKEN_ENV]}"}
    connector = aiohttp.TCPConnector(limit=CONCURRENCY)
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:

        async def reader() -> None:
            nonlocal done
            while done < units:
                job = next(cycle)
                async with session.get(f"{url}/v1/jobs/{job}") as response:
                    body = await response.read()
                if response.status != 200:
                    raise RuntimeError(f"the simulator answered {response.status}")
                done += 1
                if writer is not None:
                    writer.record(job, body)

        flusher = asyncio.create_task(writer.run()) if writer is not None else None
        await asyncio.gather(*(reader() for _ in range(CONCURRENCY)))
        if flusher is not None:
            flusher.cancel()
    if writer is not None:
        writer.close()
    return done


def floor_connection(path: Path, *, synchronous: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {synchronous}")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS seen (job TEXT PRIMARY KEY, answer BLOB, at REAL, count INT)"
    )
    conn.execute(
        "CREATE TABLE IF NOT EXISTS ops (id TEXT PRIMARY KEY, state TEXT, body TEXT, at REAL)"
    )
    conn.execute(
        "CREATE TABLE IF NOT EXISTS audit (seq INTEGER PRIMARY KEY, op TEXT, entry TEXT, "
        "prev BLOB, hash BLOB)"
    )
    return conn


STEPS = (
    "create_pending",
    "create_sent",
    "accepted",
    "observing",
    "result_collecting",
    "succeeded",
)


def floor_lifecycles(path: Path, units: int) -> int:
    """`units` lifecycles of six steps, CONCURRENCY operations' steps per synced commit, each
    step one row and one hash-chained audit row."""
    conn = floor_connection(path, synchronous="FULL")
    head = b"\0" * 32
    seq = 0
    for first in range(0, units, CONCURRENCY):
        ids = [f"op_{i:08d}" for i in range(first, min(units, first + CONCURRENCY))]
        for step, state in enumerate(STEPS):
            rows, audit = [], []
            for op in ids:
                body = json.dumps({"op": op, "state": state, "step": step, "at": time.time()})
                rows.append((op, state, body, time.time()))
                entry = json.dumps(
                    {"op": op, "to": state, "row": hashlib.sha256(body.encode()).hexdigest()},
                    separators=(",", ":"),
                )
                digest = hashlib.sha256(head + entry.encode()).digest()
                seq += 1
                audit.append((seq, op, entry, head, digest))
                head = digest
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany("INSERT OR REPLACE INTO ops VALUES (?, ?, ?, ?)", rows)
            conn.executemany("INSERT INTO audit VALUES (?, ?, ?, ?, ?)", audit)
            conn.execute("COMMIT")
    conn.close()
    return units


async def jobtrail_lifecycles(
    folder: Path, units: int, count: bool, freeze: bool
) -> tuple[int, int]:
    """(lifecycles that succeeded, SQL statements run when `count`)."""
    from bench import durable

    measured = await durable.measure_jobtrail(folder, units, count=count, freeze=freeze)
    return measured.states.get("succeeded", 0), measured.statements


def child(args: argparse.Namespace) -> dict[str, Any]:
    """Do `args.units` of `args.kind` in this process; its CPU and wall clock for them."""
    folder = Path(args.folder)
    statements = 0
    cpu, wall = time.process_time(), time.perf_counter()
    if args.kind in ("bare", "floor-poll"):
        jobs = json.loads(Path(args.ids).read_text())
        store = folder / f"floor-{os.getpid()}.db" if args.kind == "floor-poll" else None
        if store is not None:
            with floor_connection(store, synchronous="NORMAL") as conn:
                conn.executemany("INSERT INTO seen VALUES (?, NULL, 0, 0)", [(j,) for j in jobs])
            conn.close()
            cpu, wall = time.process_time(), time.perf_counter()
        done = asyncio.run(poll_loop(args.url, jobs, args.units, store=store))
    elif args.kind == "floor-life":
        done = floor_lifecycles(folder / f"life-{os.getpid()}.db", args.units)
    elif args.kind in ("jobtrail-life", "jobtrail-life-nofreeze"):
        freeze = args.kind == "jobtrail-life"
        done, statements = asyncio.run(jobtrail_lifecycles(folder, args.units, args.count, freeze))
    else:
        raise SystemExit(f"unknown kind {args.kind}")
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    out = {"units": done, "cpu_ms": 1000 * cpu / max(done, 1), "per_s": done / wall}
    if args.count:
        out["statements"] = statements / max(done, 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description="a child of bench.floor: one kind of work")
    parser.add_argument("--child", dest="kind", required=True)
    parser.add_argument("--units", type=int, required=True)
    parser.add_argument("--folder", required=True)
    parser.add_argument("--url", default="")
    parser.add_argument("--ids", default="")
    parser.add_argument("--count", action="store_true", help="count SQL statements (slower)")
    print(json.dumps(child(parser.parse_args())), flush=True)


if __name__ == "__main__":
    main()
