"""Leases on one clock (issue 19): two real `jobtrail worker` processes share a ledger while
one of them runs under faketime, 60 s ahead, 60 s behind, or with its clock stepping back
60 s mid-run. Leases are measured on the ledger's clock (PostgreSQL's, or on SQLite the
machine's boot clock, which faketime cannot move), so no operation ever has two owners at
once and no provider gets a second job for one operation: neither a lookup-only provider
(no idempotency token; a second owner's reconciliation would find nothing in flight and
create again) nor a token provider (one job per token)."""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import time
import tomllib
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from jobtrail.ledger import Ledger
from jobtrail.providers.file.config import parse_provider
from jobtrail.simulator import SimulatorThread
from jobtrail.store import open_store

from cliutil import JOBTRAIL, faked_clock
from harness import ROOT, SECRET
from stores import migrated_ledger

# `make slow` (its own CI step): two worker processes under faketime, in real time.
pytestmark = pytest.mark.slow

OPERATIONS = 10  # of each provider kind
SKEWS = ["+60s", "-60s", "steps-back"]
# The job is made 3 s after its create arrives: long enough for a second worker to start and
# a second owner's lookup to find nothing, short of the call's timeout (5 s), inside a lease
# (8 s).
SLOW_ACCEPT = {"delay_accept": 3, "duration_polls": 3}


@pytest.fixture(scope="module")
def simulator() -> Iterator[SimulatorThread]:
    with SimulatorThread(token=SECRET) as sim:
        yield sim


def _doc(base_url: str, *, token: bool) -> dict[str, Any]:
    doc = tomllib.loads((ROOT / "providers" / "simulator.toml").read_text())
    doc |= {"base_url": base_url, "timeout": "5s", "poll": {"initial": "200ms", "cap": "500ms"}}
    doc["deadlines"] = {"create": "10m", "result": "10m", "cancel": "10m"}  # past any skew
    if not token:  # lookup-only: no idempotency key, reconciled by client reference alone
        doc["name"] = "simulator-lookup"
        del doc["create"]["idempotency"]
        doc["reconcile"].pop("same_token")
    return doc


async def _submit(db: str, base_url: str, count: int = OPERATIONS) -> dict[str, bool]:
    """`count` operations of each kind; operation id -> whether its provider takes a token."""
    store = await open_store(db)
    try:
        # due a minute ago: due for both workers, whichever way one's clock is off
        ledger, made = Ledger(store, clock=_Behind()), {}
        for token in (True, False):
            spec = parse_provider(_doc(base_url, token=token))
            for n in range(count):
                op = await ledger.submit(
                    spec,
                    {"n": n, "tokened": token, "_sim": SLOW_ACCEPT},
                    actor="skew-test",
                )
                made[op.operation_id] = token
        return made
    finally:
        await store.close()


def _worker(
    db: str, folder: Path, name: str, fake: dict[str, str] | None
) -> subprocess.Popen[bytes]:
    env = {"PATH": "/usr/bin:/bin", "REPORTS_API_TOKEN": SECRET} | (fake or {})
    args = ["--db", db, "--data-dir", str(folder / "data"), "worker", "--concurrency", "20"]
    args += ["--lease", "8s", "--worker-id", name]
    with open(folder / f"{name}.log", "wb") as log:  # the worker keeps its own copy open
        return subprocess.Popen([JOBTRAIL, *args], stdout=log, stderr=log, env=env)


async def _open_count(db: str) -> int:
    store = await open_store(db)
    try:
        return sum(not op.state.ends_automation for op in await store.list_operations(limit=1000))
    finally:
        await store.close()


async def _check(db: str, made: dict[str, bool], sim: SimulatorThread) -> None:
    jobs_by_ref: Counter[str | None] = Counter()
    jobs_by_key: Counter[str | None] = Counter()
    for job in sim.jobs.values():
        jobs_by_ref[job.client_reference] += 1
        jobs_by_key[job.idempotency_key] += 1
    store = await open_store(db)
    try:
        ops = {op_id: await store.get(op_id) for op_id in made}
        assert all(op is not None and op.state.ends_automation for op in ops.values()), ops
        second = {op_id: jobs_by_ref[op_id] for op_id in made if jobs_by_ref[op_id] != 1}
        assert not second, f"operations with other than one remote job: {second}"
        for op_id, op in ops.items():
            if made[op_id]:
                assert op is not None and jobs_by_key[op.idempotency_token] == 1, op_id
        for op_id in made:
            leases = sorted(await store.leases(op_id), key=lambda lease: lease.fence)
            for before, after in itertools.pairwise(leases):  # on the ledger's one clock
                assert before.clock == after.clock and before.clock_expires is not None
                assert after.clock_acquired is not None
                ended = min(before.clock_expires, before.clock_released or before.clock_expires)
                assert after.clock_acquired >= ended, (op_id, before, after)  # never two owners
    finally:
        await store.close()


async def _creates_in_flight(db: str) -> bool:
    store = await open_store(db)
    try:
        return any(op.inflight_attempt for op in await store.list_operations(limit=1000))
    finally:
        await store.close()


async def _until(what: str, check: Any, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not await check():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("skew", SKEWS)
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_skewed_workers_never_share_a_lease_or_make_a_second_job(
    kind: str, skew: str, tmp_path: Path, simulator: SimulatorThread
) -> None:
    """One honest worker and one whose clock is 60 s ahead, 60 s behind, or steps back 60 s
    mid-run drive lookup-only and token operations to their end: every operation has one
    remote job, and its lease history (on the ledger's clock) shows one owner at a time.

    The worker whose leases look expired to the other (the honest one beside a clock
    ahead, else the skewed one) starts first and sends the creates (the provider makes a job
    3 s after its create arrives); the other starts while they are in flight, when a lease
    judged by the wrong clock would be taken over and the create made again."""
    stamp = tmp_path / "faketime"
    # steps back as NTP steps a clock: from +0 to -60s later, the monotonic clock going on
    stepping = skew == "steps-back"
    fake = faked_clock(stamp, "+0" if stepping else skew, monotonic=not stepping)
    order: list[tuple[str, dict[str, str] | None]] = [("honest", None), ("skewed", fake)]
    if skew != "+60s":
        order.reverse()
    async with migrated_ledger(kind, tmp_path) as db:
        await _submit(db.url, simulator.base_url, count=0)  # the ledger exists for both
        workers = [_worker(db.url, tmp_path, *order[0])]
        try:
            log = tmp_path / f"{order[0][0]}.log"

            async def started() -> bool:
                return log.exists() and "working on" in log.read_text()

            await _until("the first worker started", started)
            if skew == "steps-back":
                stamp.write_text("-60s")
                await asyncio.sleep(1.5)  # the faked clock re-reads the file every second
            made = await _submit(db.url, simulator.base_url)
            await _until("creates in flight", lambda: _creates_in_flight(db.url))
            workers.append(_worker(db.url, tmp_path, *order[1]))
            deadline = time.monotonic() + 150
            while await _open_count(db.url):
                assert time.monotonic() < deadline, "operations still open"
                assert all(w.poll() is None for w in workers), "a worker died"
                await asyncio.sleep(0.5)
        finally:
            for w in workers:
                w.terminate()
            for w in workers:
                try:
                    w.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    w.kill()
        await _check(db.url, made, simulator)


class _Behind:
    """A clock a minute behind the machine's (jobtrail.clock.Clock)."""

    def now(self) -> datetime:
        return datetime.now(UTC) - timedelta(minutes=1)

    async def sleep(self, seconds: float) -> None:
        import asyncio

        await asyncio.sleep(seconds)
