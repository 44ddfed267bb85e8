"""Benchmark: an unchanged poll whose answer repeats byte for byte, against the floor
(issue 32's "seen again" fast path), measured in the same run.

`bench floor` polls 5,000 never-ending simulator jobs about twice each, and their answers
change on each of those reads (progress moves), so the fast path (worker/seen.py) never
applies there. Here the jobs are never-ending with one item (`{"never_finish": true,
"items": 1}`): from its first read on, a job's status body stays byte for byte the same
(only the simulator's per-answer X-Request-ID and the Date header change, and neither is
part of an answer's identity), and only OPERATIONS of them are polled, so each is read many
times. Sides, each in a process of its own, in turns, with the one-minute load before each:

- `bare`: an aiohttp GET loop over the same jobs;
- `floor-poll`: the floor's unchanged poll (bench/floorwork.py: the GET, the bytes compared
  with the job's previous answer, "seen again at T" one row update per group commit);
- `jobtrail-poll`: jobtrail's worker as it is (an equal answer recorded as seen again);
- `jobtrail-poll-judged`: the same worker with the fast path off (`--judge-every-answer`):
  every answer decoded and judged, as before it. The "before" figure, same run.

Instructions come from two callgrind runs of different sizes per side (bench/floor.py):
the larger run's extra polls are all repeats of answers read already (OPERATIONS is below
the smaller run's polls), so the difference is the cost of a repeated answer's poll.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from bench import floor, polling
from bench.common import Figure, Report, simulator_process, use_token

OPERATIONS = 100  # polled round and round: each read many times
SAME = {"items": 1}  # with never_finish: the running answer's body never changes again
KINDS = ("bare", "floor-poll", "jobtrail-poll", "jobtrail-poll-judged")
CALLGRIND = (200, 600)  # polls in the small and the large callgrind run, per side


def polls_per_run(quick: bool) -> int:
    return 1_000 if quick else 10_000


async def measure(quick: bool) -> dict[str, Any]:
    use_token()
    polls = polls_per_run(quick)
    with simulator_process() as url, tempfile.TemporaryDirectory(prefix="jobtrail-bench-") as d:
        db, jobs = await polling.seeded(url, Path(d), OPERATIONS, SAME)
        ids = Path(d) / "ids.json"
        ids.write_text(json.dumps(jobs))
        ctx = {"url": url, "ids": str(ids), "db": db, "folder": d}
        runs = await asyncio.to_thread(floor.alternate, KINDS, polls, ctx, floor.ROUNDS)
        traced = {
            kind: await asyncio.to_thread(
                floor.spawn, kind, polls // 2, ctx, callgrind=False, count=True
            )
            for kind in ("jobtrail-poll", "jobtrail-poll-judged")
        }
        counts: dict[str, float] = {}
        if shutil.which("valgrind") and os.environ.get("JOBTRAIL_BENCH_CALLGRIND") != "0":
            pair = (CALLGRIND[0] // 2, CALLGRIND[1] // 2) if quick else CALLGRIND
            for kind in KINDS:
                counts[kind] = await asyncio.to_thread(floor.instructions_per_unit, kind, ctx, pair)
    return {"by": {e["kind"]: e["runs"] for e in runs}, "traced": traced, "counts": counts}


async def run(quick: bool) -> Report:
    report = Report("floor_same: a poll whose answer repeats, against the floor, same run")
    measured = await measure(quick)
    by, traced, counts = measured["by"], measured["traced"], measured["counts"]
    if not shutil.which("valgrind"):
        report.note("valgrind not installed (apt-get install -y valgrind): no instructions")
    for kind, runs in by.items():
        each = "; ".join(
            f"{r['units']} polls, {r['cpu_ms']:.3f} ms CPU each, {r['per_s']:,.0f}/s "
            f"(load {r['load']:.2f})"
            for r in runs
        )
        instructions = f"; {counts[kind]:,.0f} instructions each" if kind in counts else ""
        report.note(f"{kind}: {each}{instructions}")
    for ours in ("jobtrail-poll", "jobtrail-poll-judged"):
        floor.add_figures(report, f"{ours}", by[ours], by["floor-poll"], "floor-poll", 2.0)
        if ours in counts and "floor-poll" in counts:
            report.add(
                Figure(
                    name=f"{ours}, instructions (callgrind)",
                    value=counts[ours],
                    unit="instr",
                    baseline=counts["floor-poll"],
                    baseline_name="the floor (floor-poll)",
                    higher_is_better=False,
                    target="within 2x the floor",
                    met=counts[ours] <= 2.0 * counts["floor-poll"],
                )
            )
        report.note(
            f"{ours}: {traced[ours]['statements']:.2f} SQL statements per poll (traced, each "
            "executemany row counted)"
        )
    if "bare" in counts and "floor-poll" in counts:
        ratio = counts["floor-poll"] / counts["bare"]
        report.note(f"the floor's poll / a bare GET: {ratio:.2f}x in instructions")
    return report
