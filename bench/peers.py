"""Running peer benchmarks fairly: each side alone in a fresh process (`bench.peerside`), the
sides alternated round by round (jobtrail, peer, jobtrail, peer, ...), the simulator reset
before every run and told to give every job its own result (`distinct_result`), a fresh
store for every run (a new folder; a new PostgreSQL database, dropped afterwards), the
one-minute load average taken before every run and printed beside every ratio. Each ratio
pairs jobtrail's run with the peer's run of the same round.

After the timed rounds, each side runs once more under `strace -f` (seccomp-filtered, so
only the traced calls stop the process) at a quarter of the size, to count its fsync and
fdatasync calls per lifecycle between the side's start and stop marks (see bench.peerside):
the durability each side pays, in calls. On PostgreSQL the syncs are the server's, so the
side's database's committed transactions and the server's WAL syncs (pg_stat_wal, which counts
every session on the server, other users' included) are reported per lifecycle instead,
beside the side's own process's fsyncs (jobtrail's result files).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from bench import peerbytes
from bench.common import (
    PG_SERVER,
    ROOT,
    Figure,
    Report,
    fresh_pg_database,
    median,
)

SYNC_CALLS = ("fsync", "fdatasync", "sync_file_range", "syncfs")
SYNC_LINE = re.compile(r"\b(" + "|".join(SYNC_CALLS) + r")\(")


@dataclass(frozen=True)
class Entry:
    """One side as run: `label` names it in the output, `db` its PostgreSQL database."""

    label: str
    side: str
    store: str = "sqlite"
    journal: str = "default"

    @property
    def db(self) -> str:
        return f"jobtrail_bench_peer_{self.side}_{self.journal}"


@dataclass
class Run:
    entry: Entry
    load: float
    out: dict[str, Any]


def load() -> float:
    return os.getloadavg()[0]


async def reset_simulator(url: str) -> None:
    import aiohttp

    async with aiohttp.ClientSession() as session:
        async with session.post(f"{url}/_sim/reset") as response:
            response.raise_for_status()
        default = {"default": {"distinct_result": True}}
        async with session.post(f"{url}/_sim/faults", json=default) as response:
            response.raise_for_status()


def drop_pg_database(name: str) -> None:
    with psycopg.connect(f"{PG_SERVER}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def run_side(url: str, entry: Entry, n: int, *, traced: bool = False) -> Run:
    """Run one side in a fresh process (under strace when `traced`) and return its figures."""
    await reset_simulator(url)
    before = load()
    with tempfile.TemporaryDirectory(prefix="jobtrail-peer-") as tmp:
        command = [sys.executable, "-m", "bench.peerside", entry.side, "--url", url]
        command += ["--n", str(n), "--store", entry.store, "--folder", tmp]
        command += ["--journal", entry.journal]
        if entry.store == "postgres":
            command += ["--pg", fresh_pg_database(entry.db)]
        trace = Path(tmp) / "strace.txt"
        if traced:
            calls = ",".join((*SYNC_CALLS, "getppid"))
            command = ["strace", "-f", "--seccomp-bpf", "-qq", "-e", f"trace={calls}",
                       "-o", str(trace), *command]  # fmt: skip
        try:
            done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise RuntimeError(f"{entry.label} failed:\n{done.stderr[-3000:]}")
            out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
            if traced:
                out["syncs"] = count_syncs(trace.read_text(errors="replace"), out["pid"])
        finally:
            if entry.store == "postgres":
                drop_pg_database(entry.db)
    return Run(entry=entry, load=before, out=out)


def is_mark(line: str, pid: int) -> bool:
    """`PID getppid() = ...` (strace pads the PID to a width of its own)."""
    head, _, rest = line.strip().partition(" ")
    return head == str(pid) and rest.lstrip().startswith("getppid(")


def count_syncs(trace: str, pid: int) -> int:
    """fsync-family calls (any thread or child) between the side's first and last mark
    (`getppid` from its main thread)."""
    lines = trace.splitlines()
    marks = [i for i, text in enumerate(lines) if is_mark(text, pid)]
    if len(marks) < 2:
        raise RuntimeError(f"the trace has {len(marks)} marks of process {pid}, not 2")
    window = lines[marks[0] : marks[-1]]
    return sum(1 for text in window if SYNC_LINE.search(text) and "resumed>" not in text)


async def rounds(
    url: str, entries: list[Entry], n: int, count: int, report: Report
) -> dict[Entry, list[Run]]:
    """`count` rounds of every entry in turn, the peers' order reversed every other round."""
    runs: dict[Entry, list[Run]] = {e: [] for e in entries}
    first, peers = entries[0], entries[1:]
    for r in range(count):
        order = [first, *(peers if r % 2 == 0 else peers[::-1])]
        for entry in order:
            run = await run_side(url, entry, n)
            runs[entry].append(run)
            report.note(
                f"round {r + 1}: {entry.label}: {run.out['ops_per_s']:.1f} lifecycles/s "
                f"({n} in {run.out['seconds']:.1f}s), {run.out['bytes_per_op']:,.0f} B/op; "
                f"load {run.load:.2f}"
            )
    return runs


def ratio_figures(
    report: Report, runs: dict[Entry, list[Run]], ours: Entry, theirs: Entry, n: int
) -> None:
    """Per round: jobtrail's lifecycles/s against the peer's, and bytes per operation."""
    for r, (a, b) in enumerate(zip(runs[ours], runs[theirs], strict=True), start=1):
        loads = f"load {a.load:.2f} / {b.load:.2f}"
        report.add(
            Figure(
                name=f"round {r}, lifecycles/s, {n} ops, {ours.store} ({loads})",
                value=a.out["ops_per_s"],
                unit="ops/s",
                baseline=b.out["ops_per_s"],
                baseline_name=theirs.label,
            )
        )
        report.add(
            Figure(
                name=f"round {r}, stored bytes per operation, {ours.store} ({loads})",
                value=a.out["bytes_per_op"],
                unit="B/op",
                baseline=b.out["bytes_per_op"],
                baseline_name=theirs.label,
                target="no more than the peer's (ratio >= 1.0)",
                met=a.out["bytes_per_op"] <= b.out["bytes_per_op"],
                higher_is_better=False,
            )
        )


def explain(report: Report, runs: dict[Entry, list[Run]], n: int) -> None:
    """Each side's bytes per operation by table (its first round) and what it syncs."""
    for entry, done in runs.items():
        out = done[0].out
        sizes = dict(out["bytes"])
        files = sizes.pop(peerbytes.RESULT_FILES, 0)
        whole = sizes.pop(peerbytes.DB_FILES, None)
        as_left = sizes.pop(peerbytes.AS_LEFT, None)
        ranked = sorted(((v / n, k) for k, v in sizes.items() if v), reverse=True)
        tables = ", ".join(f"{k} {v:,.0f}" for v, k in ranked)
        if whole is not None:
            total = f"database file and journal/WAL {whole / n:,.0f}"
        else:
            total = f"tables after VACUUM FULL {sum(sizes.values()) / n:,.0f} (as left, "
            total += f"dead rows included: {(as_left or 0) / n:,.0f})"
        report.note(
            f"{entry.label}: stored bytes per operation {out['bytes_per_op']:,.0f}: {total}, "
            f"result files {files / n:,.0f}; by table (indexes included): {tables}"
        )
        if "durability" in out:
            report.note(f"{entry.label}: {out['durability']}")
        pg = [r.out["pg"] for r in done if "pg" in r.out]
        if pg:
            commits = median([p["xact_commit"] / n for p in pg])
            syncs = median([p["wal_sync"] / n for p in pg])
            wal = median([p["wal_bytes"] / n for p in pg])
            report.note(
                f"{entry.label}: per lifecycle (median of {len(pg)} rounds): {commits:.1f} "
                f"transactions committed in its database; server-wide {syncs:.1f} WAL syncs "
                f"and {wal:,.0f} WAL bytes (every session on the server counted)"
            )


async def traced(url: str, report: Report, entries: list[Entry], n: int) -> None:
    """One run per side under strace: fsync-family calls per lifecycle."""
    if shutil.which("strace") is None:
        report.note("strace not found: fsyncs per lifecycle not counted (apt-get install strace)")
        return
    for entry in entries:
        try:
            run = await run_side(url, entry, n, traced=True)
        except RuntimeError as exc:
            report.note(f"{entry.label}: fsyncs not counted under strace ({exc})")
            continue
        report.note(
            f"{entry.label}: {run.out['syncs'] / n:.1f} fsync/fdatasync calls per lifecycle "
            f"in its own process (strace -f, {n} lifecycles, load {run.load:.2f})"
        )
