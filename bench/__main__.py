"""`python -m bench [NAME ...] [--quick]`: jobtrail's benchmarks, each printing its figure,
the baseline measured in the same run, and their ratio. Not part of the test suite."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import platform
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime

from bench.common import Report, pg_available, pg_version, summary

BENCHMARKS = (
    "durable",
    "polling",
    "scale",
    "multiworker",
    "calls_per_job",
    "startup",
    "pollcpu",
    "processes",
    "dbos_peer",
    "procrastinate_peer",
    "storage",
    "floor",
    "floor_same",
)


def machine() -> str:
    cores = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    pg = "unreachable" if pg_available() else pg_version()
    return (
        f"{platform.node()}: {cores} cores, Python {platform.python_version()}, "
        f"SQLite {sqlite3.sqlite_version}, PostgreSQL {pg}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument(
        "names", nargs="*", metavar="NAME", help=f"benchmarks to run (default: all): {BENCHMARKS}"
    )
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="profile this process with pyinstrument (its main thread: the event loop) and "
        "print the call tree; worker processes: set JOBTRAIL_BENCH_PROFILE to a profiler "
        "command such as 'py-spy record -o profile.svg' (see bench/RESULTS.md)",
    )
    args = parser.parse_args()
    names = args.names or list(BENCHMARKS)
    unknown = sorted(set(names) - set(BENCHMARKS))
    if unknown:
        parser.error(f"unknown benchmark(s) {unknown}; known: {', '.join(BENCHMARKS)}")
    print(f"# jobtrail benchmarks, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC", flush=True)
    print(f"# {machine()}; {'quick' if args.quick else 'full'} run", flush=True)
    reports: list[Report] = []
    for name in names:
        module = importlib.import_module(f"bench.{name}")
        print(f"\n## {name}", flush=True)
        if args.profile:
            from pyinstrument import Profiler

            profiler = Profiler()
            profiler.start()
            reports.append(asyncio.run(module.run(args.quick)))
            profiler.stop()
            print(profiler.output_text(unicode=True, show_all=False))
        else:
            reports.append(asyncio.run(module.run(args.quick)))
    print("\n" + summary(reports))


if __name__ == "__main__":
    sys.exit(main())
