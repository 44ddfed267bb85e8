"""Benchmark 5, status calls per job: jobs of known duration (simulator `duration_seconds`),
with and without a Retry-After hint on status answers (`status_retry_after`), observed by
jobtrail (its default poll policy: 2 s doubling to 60 s, with jitter) and by a fixed-interval
poller asking every 2 s, both at once against the same simulator (its own process).

For every job, from the simulator's call log: how many status calls it took, and the delay
from the job's completion (created + duration) to the first status read after it. For the
hinted jobs, the gap between consecutive status calls must never be shorter than the hint,
checked on the simulator's log and on the ledger's own attempts.
"""

from __future__ import annotations

import asyncio
import itertools
import statistics
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import aiohttp

from jobtrail.core.model import AttemptKind
from jobtrail.providers.file.config import parse_provider
from jobtrail.services.runtime import runtime

from bench.common import (
    Figure,
    Report,
    auth_headers,
    provider_doc,
    sim_admin,
    simulator_process,
    use_token,
)

FIXED_EVERY = 2.0
TERMINAL = ("succeeded", "failed", "cancelled")


@dataclass(frozen=True)
class Case:
    seconds: float
    hint: int | None  # Retry-After on running status answers

    @property
    def label(self) -> str:
        hinted = f", Retry-After {self.hint}s" if self.hint else ", no hint"
        return f"{self.seconds:g}s job{hinted}"

    def sim(self) -> dict[str, Any]:
        faults: dict[str, Any] = {"duration_seconds": self.seconds}
        if self.hint:
            faults["status_retry_after"] = self.hint
        return faults


async def fixed_poller(
    session: aiohttp.ClientSession, url: str, case: Case, i: int, of: int
) -> None:
    """Create one job, then read its status every 2 s until it ends. Each job of a case
    starts polling at its own phase, evenly spread over the 2 s: a job's end does not line
    up with its poller's clock in real life (5, 20 and 60 are multiples of 2 here)."""
    body = {"who": "fixed", "case": case.label, "n": i, "_sim": case.sim()}
    async with session.post(f"{url}/v1/reports", json=body) as response:
        job_id = (await response.json())["job_id"]
    await asyncio.sleep(FIXED_EVERY * (i + 0.5) / of)
    while True:
        await asyncio.sleep(FIXED_EVERY)
        async with session.get(f"{url}/v1/jobs/{job_id}") as response:
            if (await response.json())["state"] in TERMINAL:
                return


async def jobtrail_side(url: str, cases: list[Case], per_case: int) -> dict[str, float]:
    """Submit and run every case's jobs to the end; the smallest gap (seconds) between a
    status attempt's finish and the next one's start, per hinted case."""
    spec = parse_provider(provider_doc(url))
    with tempfile.TemporaryDirectory(prefix="jobtrail-bench-") as folder:
        db = str(Path(folder) / "ledger.db")
        async with runtime(db, Path(folder) / "data", worker_id="bench-worker") as rt:
            ops: dict[str, list[str]] = defaultdict(list)
            for case in cases:
                for i in range(per_case):
                    body = {"who": "jobtrail", "case": case.label, "n": i, "_sim": case.sim()}
                    op = await rt.ledger.submit(spec, body, actor="bench")
                    ops[case.label].append(op.operation_id)
            stats = await rt.worker.run(until_idle=True)
            assert stats.finished == len(cases) * per_case, "every operation should have ended"
            gaps: dict[str, float] = {}
            for case in cases:
                for op_id in ops[case.label]:
                    polls = [
                        a
                        for a in await rt.ledger.store.attempts(op_id)
                        if a.kind is AttemptKind.STATUS
                    ]
                    for before, after in itertools.pairwise(polls):
                        assert before.finished_at is not None
                        gap = (after.started_at - before.finished_at).total_seconds()
                        gaps[case.label] = min(gaps.get(case.label, gap), gap)
    return gaps


def _at(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def per_job(calls: list[dict[str, Any]], jobs: list[dict[str, Any]]) -> dict[tuple[str, str], Any]:
    """(who, case) -> lists of status call counts, detection delays and call gaps."""
    times: dict[str, list[float]] = defaultdict(list)
    for call in calls:
        if call["kind"] == "status" and call["job_id"]:
            times[call["job_id"]].append(_at(call["at"]))
    found: dict[tuple[str, str], Any] = defaultdict(lambda: {"calls": [], "late": [], "gaps": []})
    for job in jobs:
        body = job["body"]
        done = _at(job["created_at"]) + float(job["faults"]["duration_seconds"])
        polls = sorted(times[job["job_id"]])
        entry = found[(body["who"], body["case"])]
        entry["calls"].append(len(polls))
        after = [t for t in polls if t >= done]
        if after:
            entry["late"].append(after[0] - done)
        entry["gaps"] += [b - a for a, b in itertools.pairwise(polls)]
    return found


async def run(quick: bool) -> Report:
    durations, hint, per_case = ((3.0, 8.0), 3, 3) if quick else ((5.0, 20.0, 60.0), 5, 10)
    cases = [Case(d, h) for d in durations for h in (None, hint)]
    report = Report("status calls per job (jobtrail vs a fixed 2 s poller)")
    use_token()
    with simulator_process(record_calls=True) as url:
        async with aiohttp.ClientSession(headers=auth_headers()) as session:
            pollers = [
                fixed_poller(session, url, case, i, per_case)
                for case in cases
                for i in range(per_case)
            ]
            fixed = asyncio.gather(*pollers)
            ledger_gaps = await jobtrail_side(url, cases, per_case)
            await fixed
        calls = (await sim_admin(url, "/_sim/calls?kind=status"))["data"]
        jobs = (await sim_admin(url, "/_sim/jobs"))["data"]
    found = per_job(calls, jobs)
    report.note(
        f"{per_case} jobs per case, each observed by jobtrail and by the fixed poller; "
        f"{len(calls)} status calls in all"
    )
    for case in cases:
        ours, theirs = found[("jobtrail", case.label)], found[("fixed", case.label)]
        calls_ours, calls_theirs = statistics.mean(ours["calls"]), statistics.mean(theirs["calls"])
        late_ours, late_theirs = statistics.mean(ours["late"]), statistics.mean(theirs["late"])
        report.add(
            Figure(
                name=f"{case.label}: status calls per job",
                value=calls_ours,
                unit="calls",
                baseline=calls_theirs,
                baseline_name="fixed 2 s poller",
                higher_is_better=False,
                target="fewer calls",
                met=calls_ours < calls_theirs,
            )
        )
        report.add(
            Figure(
                name=f"{case.label}: completion to detection",
                value=late_ours,
                unit="s",
                baseline=late_theirs,
                baseline_name="fixed 2 s poller",
                higher_is_better=False,
                notes=(f"max {max(ours['late']):.1f}s vs {max(theirs['late']):.1f}s",),
            )
        )
        if case.hint:
            sim_gap = min(ours["gaps"])
            ledger_gap = ledger_gaps[case.label]
            report.note(
                f"{case.label}: smallest gap between jobtrail's status calls {sim_gap:.2f}s "
                f"(simulator log), {ledger_gap:.2f}s from one attempt's end to the next's "
                f"start (ledger); the hint allows {case.hint}s"
            )
            report.add(
                Figure(
                    name=f"{case.label}: smallest gap between status calls",
                    value=min(sim_gap, ledger_gap),
                    unit="s",
                    target=f">= {case.hint}s (never before Retry-After allowed)",
                    met=min(sim_gap, ledger_gap) >= case.hint,
                )
            )
    return report
