"""Benchmark: CLI start-up. `jobtrail --version` and `jobtrail status OP` on a SQLite ledger,
each a fresh process as a user or an agent's shell runs it, against a bare `python -c pass`
timed in the same run: the ratio is the interpreter's own start-up over jobtrail's, so what
the command imports beyond Python itself shows as the distance from 1.

The three commands are timed in turns (bare, --version, status; again), so that a load that
comes and goes on a shared machine weighs on the baseline as on the figures. Targets (issue
21): `--version` within 5x the bare start-up (ratio 0.2 or more); issue 24: `status OP` within
10x (0.1 or more)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import PROVIDER_FILE, ROOT, TOKEN, TOKEN_ENV, Figure, Report, median

JOBTRAIL = str(Path(sys.executable).with_name("jobtrail"))
TARGETS = {"--version": 5.0, "status OP": 10.0}  # at most this many bare start-ups


def timed_once(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=env, capture_output=True, check=True)
    return time.perf_counter() - started


async def run(quick: bool) -> Report:
    report = Report("startup")
    runs = 7 if quick else 25
    with tempfile.TemporaryDirectory(prefix="jobtrail-bench-startup-") as folder:
        env = os.environ | {TOKEN_ENV: TOKEN, "JOBTRAIL_DB": str(Path(folder) / "ledger.db")}
        submitted = subprocess.run(
            [JOBTRAIL, "submit", str(PROVIDER_FILE), "--body", '{"account": "a"}', "--json"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        op = json.loads(submitted.stdout)["operation_id"]
        commands = {
            "bare": [sys.executable, "-c", "pass"],
            "--version": [JOBTRAIL, "--version"],
            "status OP": [JOBTRAIL, "status", op],
        }
        for command in commands.values():  # one untimed run each: the caches warm up
            timed_once(command, env)
        samples: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(runs):
            for name, command in commands.items():
                samples[name].append(timed_once(command, env))
        bare = median(samples["bare"])
        for name, times in samples.items():
            if name == "bare":
                continue
            seconds, limit = median(times), TARGETS[name]
            report.add(
                Figure(
                    name=f"jobtrail {name}, median of {runs} (in turns with the baseline)",
                    value=seconds * 1000,
                    unit="ms",
                    baseline=bare * 1000,
                    baseline_name="python -c pass",
                    higher_is_better=False,
                    target=f"within {limit:g}x python -c pass",
                    met=seconds <= limit * bare,
                )
            )
    return report
