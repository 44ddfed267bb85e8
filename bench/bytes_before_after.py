"""Stored bytes per operation of jobtrail at another commit ("before") and at this checkout
("after"), against DBOS, alternated in one run (issue 24, bench/RESULTS.md "Issue 24: bytes
per operation"). Not one of the `python -m bench` benchmarks: a before/after tool.

    python -m bench.bytes_before_after COMMIT [--n 2000] [--rounds 1] [--first-round 1]

The commit's tree is exported (`git archive`) to a temporary folder, and each side runs alone
in a fresh process (bench.peerside, the fair peer's lifecycle against the simulator, every
job with a result of its own), "before" with that tree's `src` and `bench` first on its path;
SQLite (WAL) then PostgreSQL, the order of the sides reversed on even rounds. Prints each
side's bytes per operation and its per-table breakdown (bench.peerbytes), per operation.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import peerbytes
from bench.common import ROOT, fresh_pg_database, simulator_process
from bench.peers import drop_pg_database, reset_simulator

SUMMARY = (peerbytes.DB_FILES, peerbytes.RESULT_FILES, peerbytes.AS_LEFT)


def run_side(url: str, side: str, root: Path, store: str, n: int, db: str) -> dict[str, Any]:
    asyncio.run(reset_simulator(url))
    with tempfile.TemporaryDirectory(prefix="jobtrail-bytes-") as tmp:
        command = [sys.executable, "-m", "bench.peerside", side, "--url", url, "--n", str(n)]
        command += ["--store", store, "--folder", tmp, "--journal", "wal"]
        if store == "postgres":
            command += ["--pg", fresh_pg_database(db)]
        env = os.environ | {"PYTHONPATH": str(root / "src")}
        load = os.getloadavg()[0]
        try:
            done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
        finally:
            if store == "postgres":
                drop_pg_database(db)
        if done.returncode != 0:
            raise RuntimeError(f"{side} at {root} failed:\n{done.stderr[-3000:]}")
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    out["load"] = load
    return out


def line(label: str, store: str, out: dict[str, Any]) -> str:
    n, sizes = out["n"], out["bytes"]
    tables = sorted(
        ((k, v / n) for k, v in sizes.items() if k not in SUMMARY and v / n >= 1),
        key=lambda kv: -kv[1],
    )
    by_table = "; ".join(f"{k} {v:,.0f}" for k, v in tables)
    if out["side"].startswith("jobtrail"):
        by_table += f"; result files {sizes.get(peerbytes.RESULT_FILES, 0) / n:,.0f}"
    return (
        f"| {store} | {label} | **{out['bytes_per_op']:,.0f}** | {by_table} | {out['load']:.1f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("commit", help="the 'before' commit")
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--first-round", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="jobtrail-before-") as before:
        tree = subprocess.run(
            ["git", "archive", args.commit], cwd=ROOT, capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", before], input=tree, check=True)
        sides = [
            ("jobtrail before", "jobtrail", Path(before)),
            ("jobtrail after", "jobtrail", ROOT),
            ("DBOS", "dbos", ROOT),
        ]
        with simulator_process() as url:
            for r in range(args.first_round, args.first_round + args.rounds):
                print(f"# round {r}", flush=True)
                for store in ("sqlite", "postgres"):
                    for label, side, root in sides if r % 2 else sides[::-1]:
                        db = "jobtrail_bytes_" + label.split()[-1].lower()
                        out = run_side(url, side, root, store, args.n, db)
                        print(line(label, store, out), flush=True)


if __name__ == "__main__":
    main()
