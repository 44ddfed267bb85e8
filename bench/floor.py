"""Benchmark: jobtrail against the floor (issue 32), measured in the same run.

The floor is the least a durable ledger can do for the same work:

- **the floor's unchanged poll**: an aiohttp GET of the job's status, its bytes compared with
  the previous answer for that job, and "seen again at T" recorded as one row update, every
  update of a group commit in one `executemany` (SQLite, WAL, `synchronous=NORMAL`: a safe
  read that changed nothing needs no wait for the disk, as in jobtrail);
- **the floor's lifecycle**: submit, the create's intent, its outcome, the first status read
  (running), the second (succeeded), the result collected: six steps, each one row written
  and one hash-chained audit row (sha256 over the previous hash and the row), each step's
  rows group-committed with `synchronous=FULL` (WAL), the provider answering at once, as
  `bench durable`'s instant provider does;
- **a bare GET**: the same loop without the comparison and the store.

Each side runs in a process of its own, in turns (floor, jobtrail, floor, jobtrail), and is
measured three ways: the process's CPU per unit of work (`time.process_time`, every
thread), wall-clock units per second, and instructions per unit from valgrind's callgrind
(two runs of different sizes, the difference divided by the difference of units done, so
start-up and imports cancel out). Instructions do not depend on the machine's load; CPU and
wall clock do, so the one-minute load average is printed beside each. Valgrind comes from
Debian's package (`apt-get install -y valgrind`); without it the instruction counts are
skipped with a note saying so (`JOBTRAIL_BENCH_CALLGRIND=0` skips them too: they do not
change with the load, so one set of them is enough for several timed runs).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import polling
from bench.common import ROOT, TOKEN, TOKEN_ENV, Figure, Report, simulator_process, use_token

CONCURRENCY = polling.CONCURRENCY
ROUNDS = 2  # each side this many times, in turns
COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")
# (units measured in the small and the large callgrind run) per kind
CALLGRIND_SIZES = {
    "bare": (200, 600),
    "floor-poll": (200, 600),
    "jobtrail-poll": (200, 600),
    "floor-life": (50, 150),
    "jobtrail-life": (50, 150),
    # gc.freeze() after start-up's share: the same without it
    "jobtrail-poll-nofreeze": (200, 600),
    "jobtrail-life-nofreeze": (50, 150),
}


# -- the parent: each side in its own process, in turns --------------------------------------


def spawn(
    kind: str, units: int, ctx: dict[str, str], *, callgrind: bool, count: bool = False
) -> dict[str, Any]:
    """Run one side in a process of its own (under callgrind if asked); its JSON line, with
    `instructions` when under callgrind."""
    folder = tempfile.mkdtemp(prefix="jobtrail-floor-", dir=ctx["folder"])
    if kind.startswith("jobtrail-poll"):
        db = Path(folder) / "ledger.db"
        shutil.copy(ctx["db"], db)
        command = [sys.executable, "-m", "bench.workerproc", "--db", str(db)]
        command += ["--data", str(Path(folder) / "data"), "--seconds", "100000"]
        command += ["--polls", str(units), "--concurrency", str(CONCURRENCY)]
        if kind.endswith("-nofreeze"):
            command.append("--no-freeze")
        if kind.endswith("-judged"):
            command.append("--judge-every-answer")
    else:
        command = [sys.executable, "-m", "bench.floorwork", "--child", kind, "--units", str(units)]
        command += ["--folder", folder, "--url", ctx["url"], "--ids", ctx["ids"]]
    if count:
        command.append("--count-statements" if kind.startswith("jobtrail-poll") else "--count")
    if callgrind:
        command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command]
    env = os.environ | {TOKEN_ENV: TOKEN}
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    shutil.rmtree(folder, ignore_errors=True)
    if done.returncode != 0:
        raise RuntimeError(f"{kind} failed:\n{done.stderr[-3000:]}")
    out: dict[str, Any] = json.loads([r for r in done.stdout.splitlines() if r[:1] == "{"][-1])
    if kind.startswith("jobtrail-poll"):
        out = {
            "units": out["claimed"],
            "cpu_ms": out["cpu_ms_per_claim"],
            "per_s": out["claimed"] / out["measured_seconds"],
            "statements": out["statements_per_claim"],
        }
    if callgrind:
        found = COLLECTED.findall(done.stderr)
        if not found:
            raise RuntimeError(f"callgrind printed no count:\n{done.stderr[-2000:]}")
        out["instructions"] = int(found[-1])
    return out


def instructions_per_unit(kind: str, ctx: dict[str, str], pair: tuple[int, int]) -> float:
    """Instructions per unit: two callgrind runs of different sizes, the difference of their
    counts over the difference of units done (start-up and imports cancel out)."""
    small, large = pair
    a = spawn(kind, small, ctx, callgrind=True)
    b = spawn(kind, large, ctx, callgrind=True)
    return float((b["instructions"] - a["instructions"]) / max(1, b["units"] - a["units"]))


def load() -> float:
    return os.getloadavg()[0]


def alternate(
    kinds: tuple[str, ...], units: int, ctx: dict[str, str], rounds: int
) -> list[dict[str, Any]]:
    """Each kind in its own process, in turns for `rounds` rounds; per kind its runs."""
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
    for r in range(rounds):
        order = kinds if r % 2 == 0 else tuple(reversed(kinds))
        for kind in order:
            before = load()
            out = spawn(kind, units, ctx, callgrind=False)
            out["load"] = before
            runs[kind].append(out)
    return [{"kind": k, "runs": v} for k, v in runs.items()]


def best(runs: list[dict[str, Any]], key: str, *, low: bool) -> float:
    values = [float(r[key]) for r in runs]
    return min(values) if low else max(values)


FIGURES = (
    ("an unchanged poll", "jobtrail-poll", "floor-poll", 2.0),
    ("a lifecycle", "jobtrail-life", "floor-life", 10.0),
)


def sizes(quick: bool) -> tuple[int, int, int]:
    """(operations observing, polls per run, lifecycles per run)."""
    return (500, 1_000, 200) if quick else (5_000, 10_000, 2_000)


def callgrind_sizes(quick: bool) -> dict[str, tuple[int, int]]:
    """Per kind, the units of the small and the large callgrind run (none: no counts)."""
    return (
        {k: (a // 4, b // 4) for k, (a, b) in CALLGRIND_SIZES.items()}
        if quick
        else (CALLGRIND_SIZES)
    )


async def measure(quick: bool) -> dict[str, Any]:
    """Every side's runs in turns, the traced statement counts and the instruction counts."""
    use_token()
    n, polls, lives = sizes(quick)
    with simulator_process() as url, tempfile.TemporaryDirectory(prefix="jobtrail-bench-") as d:
        db, jobs = await polling.seeded(url, Path(d), n)
        ids = Path(d) / "ids.json"
        ids.write_text(json.dumps(jobs))
        ctx = {"url": url, "ids": str(ids), "db": db, "folder": d}
        poll_kinds = ("bare", "floor-poll", "jobtrail-poll")
        poll = await asyncio.to_thread(alternate, poll_kinds, polls, ctx, ROUNDS)
        life_kinds = ("floor-life", "jobtrail-life")
        life = await asyncio.to_thread(alternate, life_kinds, lives, ctx, ROUNDS)
        traced = {
            kind: await asyncio.to_thread(spawn, kind, units, ctx, callgrind=False, count=True)
            for kind, units in (("jobtrail-poll", polls // 2), ("jobtrail-life", lives // 2))
        }
        counts: dict[str, float] = {}
        if shutil.which("valgrind") and os.environ.get("JOBTRAIL_BENCH_CALLGRIND") != "0":
            for kind, pair in callgrind_sizes(quick).items():
                counts[kind] = await asyncio.to_thread(instructions_per_unit, kind, ctx, pair)
    return {"by": {e["kind"]: e["runs"] for e in poll + life}, "traced": traced, "counts": counts}


async def run(quick: bool) -> Report:
    report = Report("floor: jobtrail against the minimal durable ledger, same run")
    measured = await measure(quick)
    by, traced, counts = measured["by"], measured["traced"], measured["counts"]
    if not shutil.which("valgrind"):
        report.note("valgrind not installed (apt-get install -y valgrind): no instructions")
    for kind, runs in by.items():
        each = "; ".join(
            f"{r['units']} in its own process, {r['cpu_ms']:.3f} ms CPU each, "
            f"{r['per_s']:,.0f}/s (load {r['load']:.2f})"
            for r in runs
        )
        instructions = f"; {counts[kind]:,.0f} instructions each" if kind in counts else ""
        report.note(f"{kind}: {each}{instructions}")
    for name, ours, floor, within in FIGURES:
        add_figures(report, name, by[ours], by[floor], floor, within)
        if ours in counts and floor in counts:
            report.add(
                Figure(
                    name=f"{name}, instructions (callgrind)",
                    value=counts[ours],
                    unit="instr",
                    baseline=counts[floor],
                    baseline_name=f"the floor ({floor})",
                    higher_is_better=False,
                    target=f"within {within:g}x the floor",
                    met=counts[ours] <= within * counts[floor],
                )
            )
    poll_statements = traced["jobtrail-poll"]["statements"]
    life_statements = traced["jobtrail-life"]["statements"]
    report.note(
        "SQL statements run (traced, each executemany row counted): per unchanged poll "
        f"{poll_statements:.2f} (the floor: 1 row and a share of its group's BEGIN and "
        f"COMMIT); per lifecycle {life_statements:.1f} (the floor: 12 rows, 6 x 2 / "
        f"{CONCURRENCY} BEGIN and COMMIT)"
    )
    for kind in ("jobtrail-poll", "jobtrail-life"):
        if kind in counts and f"{kind}-nofreeze" in counts:
            report.note(
                f"{kind} without gc.freeze() after start-up: "
                f"{counts[f'{kind}-nofreeze']:,.0f} instructions each, against "
                f"{counts[kind]:,.0f} with it"
            )
    bare_cpu = best(by["bare"], "cpu_ms", low=True)
    floor_cpu = best(by["floor-poll"], "cpu_ms", low=True)
    if "bare" in counts and "floor-poll" in counts:
        ratio = counts["floor-poll"] / counts["bare"]
        report.note(f"the floor's poll / a bare GET: {ratio:.2f}x in instructions")
    report.note(f"the floor's poll / a bare GET: {floor_cpu / bare_cpu:.2f}x in CPU")
    return report


def add_figures(
    report: Report,
    name: str,
    ours: list[dict[str, Any]],
    floor: list[dict[str, Any]],
    floor_kind: str,
    within: float,
) -> None:
    """CPU (best run of each side) and wall clock against the floor's."""
    loads = ", ".join(f"{r['load']:.1f}" for r in ours)
    cpu, base = best(ours, "cpu_ms", low=True), best(floor, "cpu_ms", low=True)
    report.add(
        Figure(
            name=f"{name}, CPU (best of {len(ours)}; loads {loads})",
            value=cpu,
            unit="ms",
            baseline=base,
            baseline_name=f"the floor ({floor_kind})",
            higher_is_better=False,
            target=f"within {within:g}x the floor",
            met=cpu <= within * base,
        )
    )
    report.add(
        Figure(
            name=f"{name}, wall clock",
            value=best(ours, "per_s", low=False),
            unit="/s",
            baseline=best(floor, "per_s", low=False),
            baseline_name=f"the floor ({floor_kind})",
        )
    )
