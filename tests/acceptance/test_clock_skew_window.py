"""The visibility window on the ledger's clock (issue 36): real `jobtrail worker` processes,
one of them under faketime, drive operations of a lookup-only provider whose listing shows
a job 15 s after it is made (declared: within 17 s). Every create's answer is lost; the
first worker settles them create_unknown and looks each up once (a miss), then:

* `+60s`: it dies, and a worker 60 s ahead takes over;
* `-60s`: it runs 60 s behind, dies, and an honest worker takes over;
* `steps-forward`: its own clock steps 60 s forward and it goes on.

When the window was judged on the clock of whichever worker read the lookup, the next miss
passed for proof that no job exists and every operation was created again (the adversary's
run: 8 operations, 16 remote jobs). On the ledger's clock (PostgreSQL's, or on SQLite the
machine's, which faketime does not reach) each operation keeps looking until its job is
listed: 8 operations, 8 jobs, none ended early, and one lease owner at a time.

The window is short (17 s: every case waits for it) and a minute of skew is far past it.
Each case also checks that it tested something: every operation was looked up, and missed,
on the skewed or taken-over clock before its job was listed (the lookups after the first
come on the ledger's retry backoff, about 8 s later, then at the window's end), so a run
too slow to reach that miss fails instead of passing without a miss to misjudge."""

from __future__ import annotations

import asyncio
import itertools
import signal
import subprocess
import time
import tomllib
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from jobtrail.core.model import AttemptKind
from jobtrail.core.states import State
from jobtrail.ledger import Ledger
from jobtrail.providers.file.config import parse_provider
from jobtrail.simulator import SimulatorThread
from jobtrail.store import open_store

from cliutil import JOBTRAIL, faked_clock
from harness import ROOT, SECRET
from stores import fresh_ledger

OPERATIONS = 8
LISTED_AFTER = 15  # seconds after the job is made; declared visible within WINDOW
WINDOW = 17
CASES = ["+60s", "-60s", "steps-forward"]


@pytest.fixture(scope="module")
def simulator() -> Iterator[SimulatorThread]:
    with SimulatorThread(token=SECRET) as sim:
        yield sim


def _lookup_only(base_url: str) -> dict[str, Any]:
    doc = tomllib.loads((ROOT / "providers" / "simulator.toml").read_text())
    doc |= {"base_url": base_url, "timeout": "5s", "poll": {"initial": "500ms", "cap": "2s"}}
    doc["name"] = "simulator-lookup"
    doc["deadlines"] = {"create": "10m", "result": "10m", "cancel": "10m"}  # past any skew
    del doc["create"]["idempotency"]
    doc["reconcile"].pop("same_token")
    doc["reconcile"]["list"]["visible_within"] = f"{WINDOW}s"
    return doc


async def _submit(db: str, base_url: str) -> list[str]:
    store = await open_store(db)
    try:
        # due a minute ago: due for every worker, whichever way its clock is off
        ledger, spec = Ledger(store, clock=_Behind()), parse_provider(_lookup_only(base_url))
        sim = {"drop_create_answer": True, "list_visible_after": LISTED_AFTER}
        made = [
            await ledger.submit(spec, {"n": n, "_sim": sim}, actor="skew-test")
            for n in range(OPERATIONS)
        ]
        return [op.operation_id for op in made]
    finally:
        await store.close()


def _worker(
    db: str, folder: Path, name: str, fake: dict[str, str] | None
) -> subprocess.Popen[bytes]:
    env = {"PATH": "/usr/bin:/bin", "REPORTS_API_TOKEN": SECRET} | (fake or {})
    args = ["--db", db, "--data-dir", str(folder / "data"), "worker", "--concurrency", "20"]
    args += ["--lease", "8s", "--worker-id", name]
    with open(folder / f"{name}.log", "wb") as log:
        return subprocess.Popen([JOBTRAIL, *args], stdout=log, stderr=log, env=env)


async def _states(db: str, ids: list[str]) -> list[State]:
    store = await open_store(db)
    try:
        return [op.state for op in [await store.get(i) for i in ids] if op is not None]
    finally:
        await store.close()


async def _until(what: str, check: Any, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not await check():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.1)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_a_skewed_or_stepped_clock_never_takes_a_miss_for_proof(
    kind: str, case: str, tmp_path: Path, simulator: SimulatorThread
) -> None:
    """Eight lost create answers, each looked up once (a miss) by the first worker; then a
    worker 60 s ahead takes over, or an honest one after a worker 60 s behind, or the first
    worker's clock steps 60 s forward: every operation ends succeeded with its one job."""
    stamp = tmp_path / "faketime"
    first = {"+60s": None, "-60s": "-60s", "steps-forward": "+0"}[case]
    first_fake = None if first is None else faked_clock(stamp, first)
    async with fresh_ledger(kind, tmp_path) as db:
        ids = await _submit(db.url, simulator.base_url)
        workers = [_worker(db.url, tmp_path, "first", first_fake)]
        try:

            async def looked_once() -> bool:
                states = await _states(db.url, ids)
                return all(s is State.RECONCILIATION for s in states)

            await _until("every create answered lost and looked up once", looked_once)
            if case == "steps-forward":
                stamp.write_text("+60s")  # re-read by the faked clock within a second
                skewed = ("first", datetime.now(UTC) + timedelta(seconds=2))
            else:
                skewed = ("second", datetime.now(UTC))
                workers[0].send_signal(signal.SIGKILL)
                workers[0].wait(timeout=20)
                later = faked_clock(stamp, "+60s") if case == "+60s" else None
                workers.append(_worker(db.url, tmp_path, "second", later))

            async def ended() -> bool:
                return all(s.ends_automation for s in await _states(db.url, ids))

            await _until("every operation ended", ended, seconds=150)
        finally:
            for w in workers:
                if w.poll() is None:
                    w.terminate()
            for w in workers:
                try:
                    w.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    w.kill()
        await _check(db.url, ids, simulator)
        await _missed_on_the_skewed_clock(db.url, ids, *skewed)


async def _missed_on_the_skewed_clock(db: str, ids: list[str], actor: str, since: datetime) -> None:
    """Each operation was looked up by `actor`, on the skewed (or taken-over) clock, from
    `since` on the ledger's clock, and that lookup missed (a lookup before the one that found
    the job): the case put a miss in front of the misjudgment it is about."""
    store = await open_store(db)
    try:
        for op_id in ids:
            lookups = [a for a in await store.attempts(op_id) if a.kind is AttemptKind.RECONCILE]
            lookups.sort(key=lambda a: a.started_at)
            misses = [a for a in lookups[:-1] if a.actor == actor and a.started_at >= since]
            assert misses, (op_id, "no miss on the skewed clock before the job was listed")
    finally:
        await store.close()


async def _check(db: str, ids: list[str], sim: SimulatorThread) -> None:
    jobs = Counter(job.client_reference for job in sim.jobs.values())
    store = await open_store(db)
    try:
        assert {i: jobs[i] for i in ids} == dict.fromkeys(ids, 1), "a second job"
        ops = [await store.get(i) for i in ids]
        assert {op.operation_id: op.state for op in ops if op is not None} == dict.fromkeys(
            ids, State.SUCCEEDED
        )
        for op_id in ids:
            leases = sorted(await store.leases(op_id), key=lambda lease: lease.fence)
            for before, after in itertools.pairwise(leases):  # on the ledger's one clock
                assert before.clock_expires is not None and after.clock_acquired is not None
                ended = min(before.clock_expires, before.clock_released or before.clock_expires)
                assert after.clock_acquired >= ended, (op_id, before, after)
    finally:
        await store.close()


class _Behind:
    """A clock a minute behind the machine's (jobtrail.clock.Clock)."""

    def now(self) -> datetime:
        return datetime.now(UTC) - timedelta(minutes=1)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_a_worker_ahead_ends_no_deadline_early(
    kind: str, tmp_path: Path, simulator: SimulatorThread
) -> None:
    """Operations with a 50 s create deadline, driven by one `worker --until-idle` whose
    clock is 60 s ahead: on the ledger's clock their deadline is still ahead, so each is
    created and ends succeeded, none `failed` by a deadline read on the worker's clock."""
    doc = tomllib.loads((ROOT / "providers" / "simulator.toml").read_text())
    doc |= {"base_url": simulator.base_url, "poll": {"initial": "200ms", "cap": "500ms"}}
    doc["deadlines"] = {"create": "50s", "result": "10m", "cancel": "10m"}
    async with fresh_ledger(kind, tmp_path) as db:
        store = await open_store(db.url)
        try:
            ledger, spec = Ledger(store), parse_provider(doc)
            ids = [(await ledger.submit(spec, {"n": n}, actor="t")).operation_id for n in range(4)]
        finally:
            await store.close()
        fake = faked_clock(tmp_path / "faketime", "+60s")
        env = {"PATH": "/usr/bin:/bin", "REPORTS_API_TOKEN": SECRET} | fake
        args = ["--db", db.url, "--data-dir", str(tmp_path / "data"), "worker", "--until-idle"]
        done = subprocess.run([JOBTRAIL, *args], env=env, capture_output=True, timeout=120)
        assert done.returncode == 0, done.stderr
        states = await _states(db.url, ids)
        assert states == [State.SUCCEEDED] * len(ids), states
        jobs = Counter(job.client_reference for job in simulator.jobs.values())
        assert [jobs[i] for i in ids] == [1] * len(ids)
