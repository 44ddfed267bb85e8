"""The claim's cost as the ledger grows, in what the machine's load does not move (part of
benchmark 3): the worker's own claim (`store.claim_due` with the code-provider filter, as
`Worker` calls it) of BATCH due rows among N observing operations, N = 10,000 and 100,000.

- SQLite: instructions per claim, valgrind's callgrind over two runs of different numbers
  of claims on copies of one seeded ledger (start-up, imports and opening cancel out), and
  the claim's EXPLAIN QUERY PLAN;
- PostgreSQL: EXPLAIN (ANALYZE, BUFFERS) of the claim, rolled back: the buffers it touches
  and the rows it reads (in pages, which the load does not move), and its time.

`python -m bench.claimcount` prints them; `--child` is one claiming process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import subprocess
import sys
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg

from jobtrail.providers.file.config import parse_provider
from jobtrail.store import open_store
from jobtrail.store.postgres import Q as PG_Q
from jobtrail.store.sqlite import Q as SQLITE_Q
from jobtrail.store.sqlite import SqliteStore

from bench import seed
from bench.common import ROOT, fresh_pg_database, pg_available, provider_doc

BATCH = 50  # the worker's concurrency: its claims take up to this many
SIZES = (10_000, 100_000)
CLAIMS = (10, 40)  # claims in the small and the large callgrind run
COLLECTED = re.compile(r"Collected : (\d+)")


def seeded(db: str, n: int) -> None:
    """`n` observing operations, all due (poll times spread over the last 100 s)."""
    spec = parse_provider(provider_doc("http://127.0.0.1:1", poll_initial="200s"))
    start = seed.now()
    dues = seed.spread(start - timedelta(seconds=100), 99.0, n)
    seed.insert(db, seed.rows(seed.codec_for(db), seed.template(spec, start), None, dues,
                              count=n, seed=1))  # fmt: skip


async def claim_many(db: str, claims: int) -> int:
    store = await SqliteStore.open(db)
    got = 0
    try:
        for _ in range(claims):
            leased = await store.claim_due(
                "bench", seed.now(), BATCH, timedelta(seconds=60), code=frozenset()
            )
            got += len(leased)
    finally:
        await store.close()
    return got


def instructions(db: str, claims: int, folder: str) -> tuple[int, int]:
    """(instructions, rows claimed) of one claiming process under callgrind, on a copy."""
    copy = Path(tempfile.mkdtemp(dir=folder)) / "ledger.db"
    shutil.copy(db, copy)
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    command += [sys.executable, "-m", "bench.claimcount", "--child", str(copy), str(claims)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    found = COLLECTED.findall(done.stderr)
    if done.returncode != 0 or not found:
        raise RuntimeError(f"the claiming process failed:\n{done.stderr[-2000:]}")
    return int(found[-1]), int(json.loads(done.stdout.splitlines()[-1])["claimed"])


def sqlite_plan(db: str) -> str:
    import sqlite3

    sql = SQLITE_Q["claimable"].format(only=" " + SQLITE_Q["claimable_drives"])
    with sqlite3.connect(db) as conn:
        args = (seed.codec_for(db).t_out(seed.now()), "boot:x", 0.0, "[]", BATCH)
        rows = conn.execute("EXPLAIN QUERY PLAN " + sql, args).fetchall()
    return "; ".join(str(row[-1]) for row in rows)


def pg_explain(url: str, *, analyze: bool = True) -> dict[str, Any]:
    """The claim's EXPLAIN (ANALYZE, BUFFERS), rolled back (after ANALYZE of the table, with
    `analyze`: the planner's statistics of a table seeded just now)."""
    now = seed.now()
    args = {"now": now, "limit": BATCH, "owner": "bench", "expires": now + timedelta(seconds=60)}
    args |= {"lease_s": 60.0, "only": None, "code": []}
    with psycopg.connect(url) as conn:
        if analyze:
            conn.execute("ANALYZE operations")
        plan = conn.execute(
            "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + PG_Q["claim_due_drives"], args
        ).fetchone()[0][0]
        conn.rollback()
    top = plan["Plan"]
    return {
        "ms": plan["Execution Time"],
        "buffers": top.get("Shared Hit Blocks", 0) + top.get("Shared Read Blocks", 0),
        "due_scan": _find(top, "operations_due"),
    }


def _find(node: dict[str, Any], index: str) -> str:
    if node.get("Index Name") == index:
        removed = node.get("Rows Removed by Filter", 0)
        return f"{node['Node Type']} on {index}: {node['Actual Rows']} rows, {removed} filtered"
    for child in node.get("Plans", []):
        if found := _find(child, index):
            return found
    return ""


async def measure() -> list[str]:
    lines = []
    with tempfile.TemporaryDirectory(prefix="jobtrail-bench-") as folder:
        for n in SIZES:
            db = str(Path(folder) / f"ledger-{n}.db")
            await (await open_store(db)).close()
            await asyncio.to_thread(seeded, db, n)
            (a, rows_a), (b, rows_b) = (instructions(db, k, folder) for k in CLAIMS)
            per = (b - a) / max(1, (rows_b - rows_a) / BATCH)
            lines.append(
                f"sqlite, N={n:,}: {per:,.0f} instructions per claim of {BATCH} "
                f"({per / BATCH:,.0f} per row; callgrind, {CLAIMS[0]} vs {CLAIMS[1]} claims); "
                f"plan: {sqlite_plan(db)}"
            )
        if pg_available() is None:
            for n in SIZES:
                url = fresh_pg_database("jobtrail_bench_claimcount")
                await (await open_store(url)).close()
                await asyncio.to_thread(seeded, url, n)
                found = pg_explain(url)
                lines.append(
                    f"postgres, N={n:,}: claim of {BATCH}: {found['buffers']} buffers, "
                    f"{found['ms']:.2f} ms; {found['due_scan']}"
                )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--child", nargs=2, metavar=("DB", "CLAIMS"))
    args = parser.parse_args()
    if args.child:
        claimed = asyncio.run(claim_many(args.child[0], int(args.child[1])))
        print(json.dumps({"claimed": claimed}))
        return
    for line in asyncio.run(measure()):
        print(line, flush=True)


if __name__ == "__main__":
    main()
