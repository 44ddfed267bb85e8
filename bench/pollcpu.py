"""Benchmark: where a poll's CPU goes (issue 24). The polling benchmark's set-up (a SQLite
ledger of observing operations on never-ending simulator jobs, the simulator in its own
process), measured three ways, each process alone:

1. the worker process (bench.workerproc) unprofiled: its CPU (user + system, every thread)
   per poll completed, over the measured window, and of it the SQLite store's writer thread
   (`time.thread_time` around what it is handed; the rest is the event loop's thread);
2. a bare aiohttp GET loop on the same simulator endpoint at the same concurrency, in a
   process of its own (`python -m bench.pollcpu`): its CPU per GET, over the same length
   of window: the ratio is a bare GET's CPU over a poll's;
3. the worker again under py-spy (`py-spy record --gil --format raw`, the `bench` extra:
   only the thread holding the GIL is sampled, so a thread waiting for the GIL, which
   py-spy otherwise counts as busy, is not), its samples aggregated by the module of the
   innermost Python frame (self) and by each jobtrail module on the stack (inclusive).

Every figure is printed with the one-minute load average before its run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import polling
from bench.common import ROOT, TOKEN, TOKEN_ENV, Figure, Report, simulator_process, use_token

CONCURRENCY = polling.CONCURRENCY
FRAME = re.compile(r"^(?P<function>.*) \((?P<file>[^()]*):(?P<line>\d+)\)$")
TOP = 15


def module_of(frame: str) -> str:
    """`send (aiohttp/client.py:512)` → `aiohttp.client`."""
    found = FRAME.match(frame.strip())
    if found is None:
        return frame.strip() or "(no Python frame)"
    path = found["file"]
    if "site-packages/" in path:
        path = path.rsplit("site-packages/", 1)[1]
    elif "/src/" in path:
        path = path.rsplit("/src/", 1)[1]
    path = path.removesuffix(".py").removesuffix("/__init__")
    return path.lstrip("/").replace("/", ".") or "(unknown)"


# innermost frames that wait rather than work: a thread pool's idle worker, the event loop's
# epoll, a lock or queue; py-spy's idle detection misses some of them
WAITING = ("concurrent.futures.thread", "selectors", "threading", "queue")
STARTUP = "<frozen importlib"


@dataclass
class Profile:
    """py-spy samples: `total`, of which `waiting` and `startup` (imports) are set apart;
    the rest by the innermost frame's module (self), its package, and jobtrail module on the
    stack (inclusive)."""

    total: int = 0
    waiting: int = 0
    startup: int = 0
    own: Counter[str] = field(default_factory=Counter)
    package: Counter[str] = field(default_factory=Counter)
    inclusive: Counter[str] = field(default_factory=Counter)

    @property
    def working(self) -> int:
        return self.total - self.waiting - self.startup


def package_of(module: str) -> str:
    """`jobtrail.providers.http.provider` → `jobtrail.providers`; `aiohttp.client` → `aiohttp`."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "jobtrail" and len(parts) > 2 else parts[0]


def aggregate(raw: str) -> Profile:
    """Aggregate py-spy's raw (collapsed) output: one `frame;frame;... count` line per
    distinct stack."""
    profile = Profile()
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        samples = int(count)
        modules = [module_of(f) for f in stack.split(";") if f.strip()]
        leaf = modules[-1] if modules else "(no Python frame)"
        profile.total += samples
        if any(m.startswith(STARTUP) for m in modules):
            profile.startup += samples
        elif leaf in WAITING:
            profile.waiting += samples
        else:
            profile.own[leaf] += samples
            profile.package[package_of(leaf)] += samples
            for name in set(modules):
                if name.startswith("jobtrail."):
                    profile.inclusive[name] += samples
    return profile


def shares(counts: Counter[str], total: int, top: int = TOP) -> str:
    return ", ".join(f"{name} {100 * c / total:.1f}%" for name, c in counts.most_common(top))


def bare_gets(url: str, jobs: list[str], seconds: float) -> dict[str, Any]:
    """Run the bare GET loop in a process of its own; its figures."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as ids:
        json.dump(jobs, ids)
    try:
        command = [sys.executable, "-m", "bench.pollcpu", "--url", url, "--ids", ids.name]
        command += ["--seconds", str(seconds), "--concurrency", str(CONCURRENCY)]
        env = os.environ | {TOKEN_ENV: TOKEN}
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"the bare GET process failed:\n{done.stderr[-3000:]}")
        out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return out
    finally:
        Path(ids.name).unlink()


async def run(quick: bool) -> Report:
    n, seconds, warmup = (2_000, 5.0, 2.0) if quick else (10_000, 20.0, 3.0)
    report = Report("pollcpu")
    use_token()
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    with simulator_process() as url, tempfile.TemporaryDirectory(prefix="jobtrail-bench-") as d:
        folder = Path(d)
        db, jobs = await polling.seeded(url, folder, n)
        loads = [os.getloadavg()[0]]
        worker = await asyncio.to_thread(
            polling.run_worker, db, folder / "data", seconds + warmup, warmup, CONCURRENCY
        )
        loads.append(os.getloadavg()[0])
        bare = await asyncio.to_thread(bare_gets, url, jobs, seconds)
        poll_ms, get_ms = worker["cpu_ms_per_claim"], bare["cpu_ms_per_get"]
        writer_ms = worker["writer_cpu_ms_per_claim"]
        report.note(
            f"worker: {worker['claimed_measured']} polls in {worker['measured_seconds']:.1f}s, "
            f"{poll_ms:.3f} ms CPU per poll (of it, the store's writer thread {writer_ms:.3f} "
            f"ms, the event loop's thread {poll_ms - writer_ms:.3f} ms; load {loads[0]:.2f}); "
            "bare aiohttp: "
            f"{bare['gets']} GETs in {bare['seconds']:.1f}s, {get_ms:.3f} ms CPU per GET "
            f"(load {loads[1]:.2f})"
        )
        report.add(
            Figure(
                name=f"CPU per poll, one worker, {n} observing (load {loads[0]:.2f} / "
                f"{loads[1]:.2f})",
                value=poll_ms,
                unit="ms",
                baseline=get_ms,
                baseline_name=f"bare aiohttp GET, concurrency {CONCURRENCY}, own process",
                target="within 3x a bare GET (ratio >= 0.33)",
                met=get_ms * 3 >= poll_ms,
                higher_is_better=False,
            )
        )
        if not Path(spy).exists():
            report.note("py-spy not installed (the bench extra): no profile")
            return report
        raw = folder / "profile.txt"
        profiler = f"{spy} record --gil --format raw --rate 200 --output {raw}"
        load = os.getloadavg()[0]
        await asyncio.to_thread(
            polling.run_worker, db, folder / "data", seconds + warmup, 0.0, CONCURRENCY, profiler
        )
        profile = aggregate(raw.read_text())
    work = profile.working
    report.note(
        f"py-spy --gil (only the thread holding the GIL is sampled: Python's share of the CPU; "
        f"SQLite's own stepping and fsyncs run without it and are in the writer thread's CPU "
        f"above), whole run, load {load:.2f}: {profile.total} samples, of which waiting "
        f"{profile.waiting} (innermost frame in {', '.join(WAITING)}) and start-up imports "
        f"{profile.startup}; shares below are of the other {work}"
    )
    report.note(f"by package, self: {shares(profile.package, work)}")
    report.note(f"by module, self: {shares(profile.own, work)}")
    report.note(f"by jobtrail module, inclusive: {shares(profile.inclusive, work)}")
    return report


# -- the bare GET loop, in its own process --------------------------------------------------


async def hammer(url: str, jobs: list[str], seconds: float, concurrency: int) -> dict[str, Any]:
    import itertools

    import aiohttp

    cycle = itertools.cycle(jobs)
    counted, counting = 0, False
    connector = aiohttp.TCPConnector(limit=concurrency)
    headers = {"Authorization": f"Bearer {os.environ[TOKEN_ENV]}"}
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:

        async def reader() -> None:
            nonlocal counted
            while True:
                async with session.get(f"{url}/v1/jobs/{next(cycle)}") as response:
                    await response.read()
                    if response.status != 200:
                        raise RuntimeError(f"the simulator answered {response.status}")
                if counting:
                    counted += 1

        readers = [asyncio.create_task(reader()) for _ in range(concurrency)]
        await asyncio.sleep(1.0)
        counting, cpu, wall = True, time.process_time(), time.perf_counter()
        await asyncio.sleep(seconds)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        gets = counted
        for task in readers:
            task.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
    return {"gets": gets, "seconds": wall, "cpu_ms_per_get": 1000 * cpu / max(gets, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description="the bare GET loop of bench.pollcpu")
    parser.add_argument("--url", required=True)
    parser.add_argument("--ids", required=True, help="a JSON file of simulator job ids")
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--concurrency", type=int, default=CONCURRENCY)
    args = parser.parse_args()
    jobs = json.loads(Path(args.ids).read_text())
    out = asyncio.run(hammer(args.url, jobs, args.seconds, args.concurrency))
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
