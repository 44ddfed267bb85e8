"""Partitions, on purpose (issue 19): two `jobtrail worker` processes and a client, each in
its own network namespace, share a PostgreSQL ledger and the simulator, both in the root
namespace (tests/netns.py). Mid-run the links between them are cut and healed for real
(packets vanish, open TCP connections hang), while worker A's clock steps back 60 s and
worker B's runs 60 s ahead:

(a) A is cut from the database while its creates are in flight, its clock steps back (by
    it, its leases have a minute more to run), and it is healed only after its leases
    ended on the database's clock and B (to whom every lease ends a minute early) took
    the operations over: A's late writes must be refused, and B must make no second job;
(b) both workers are cut from the provider while their creates are in flight: the answers
    are lost, and reconciliation must find the jobs that landed rather than create again;
(c) the client is cut from the database while its submits wait there (behind a table
    lock): it never hears back, and its retries (same keys) must make no second operation.

Then, from the simulator's own records and the ledger: no operation has a second remote job,
no lease had two owners at once (on the database's clock), every operation ended or waits
for a person, every acknowledged submit is there, once."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import subprocess
import time
from collections import Counter
from pathlib import Path

import psycopg
import pytest

from jobtrail.core.model import Operation
from jobtrail.simulator import SimulatorThread
from jobtrail.store import Store, open_store
from jobtrail.store.leases import Lease
from netns import Forwarder, Host, Lab, lab_fixture  # noqa: F401 (the fixture partition_lab)

from cliutil import JOBTRAIL, faked_clock, faketime_library
from harness import ROOT, SECRET
from stores import migrated_ledger
from waits import until_true_async

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

LEASE_S = 8
RUN_S = 240  # the whole run, at most (about a minute on a quiet machine)
SUBMIT_WAIT_S = 15  # how long the client waits for a submit's answer
CLIENT = "partition-client"  # the client's connections' application_name
PER_KIND = 3  # operations of each provider kind (token, lookup-only) in each batch
# The job is made when its create arrives, its answer held 3 s (short of the call's 5 s
# timeout): long enough to cut a link while the create is in flight.
IN_FLIGHT = {"delay_create": 3, "duration_polls": 3}


def _provider(folder: Path, base_url: str, *, token: bool) -> Path:
    """The shipped simulator provider file, aimed at `base_url`; without `token`, a
    lookup-only provider (no idempotency key: reconciled by client reference alone)."""
    text = (ROOT / "providers" / "simulator.toml").read_text()
    text = re.sub(r"(?m)^base_url = .*$", f'base_url = "{base_url}"', text)
    text = re.sub(r"(?m)^base_url_env = .*\n", "", text)
    top = 'timeout = "5s"\npoll = { initial = "200ms", cap = "500ms" }\n'
    text = text.replace("\n[create]", f"{top}\n[create]", 1)
    text = re.sub(
        r"(?ms)^\[deadlines\].*",
        '[deadlines]\ncreate = "10m"\nresult = "10m"\ncancel = "10m"\n',
        text,
    )
    name = "simulator-token"
    if not token:
        name = "simulator-lookup"
        text = re.sub(r"(?m)^idempotency = .*\n", "", text)
        text = re.sub(r"(?m)^same_token = .*\n", "", text)
    text = re.sub(r"(?m)^name = .*$", f'name = "{name}"', text)
    path = folder / f"{name}.toml"
    path.write_text(text)
    return path


class Rig:
    def __init__(self, lab: Lab, folder: Path, worker_db: str, admin_db: str) -> None:
        self.lab, self.folder, self.worker_db, self.admin_db = lab, folder, worker_db, admin_db
        self.client_db = f"{worker_db}&application_name={CLIENT}"
        self.workers: dict[str, subprocess.Popen[bytes]] = {}
        self.store: Store | None = None  # the test's own view of the ledger (no partition)
        self.unanswered: list[str] = []  # keys whose submit the client saw no answer to
        self.refusals: list[str] = []  # what the client said when a submit failed

    def env(self, fake: dict[str, str] | None = None) -> list[str]:
        return self.env_of(fake)

    @staticmethod
    def env_of(fake: dict[str, str] | None = None) -> list[str]:
        env = {"PATH": "/usr/bin:/bin", "REPORTS_API_TOKEN": SECRET} | (fake or {})
        return ["/usr/bin/env", "-i", *(f"{k}={v}" for k, v in env.items())]

    def start_worker(self, host: Host, fake: dict[str, str] | None) -> None:
        log = open(self.folder / f"{host.name}.log", "wb")  # noqa: SIM115
        args = ["--db", self.worker_db, "--data-dir", str(self.folder / f"data-{host.name}")]
        args += ["worker", "--concurrency", "20", "--lease", f"{LEASE_S}s"]
        args += ["--worker-id", f"worker-{host.name}"]
        argv = host.run([*self.env(fake), JOBTRAIL, *args])
        with log:  # the worker holds its own copy of the file
            self.workers[host.name] = subprocess.Popen(argv, stdout=log, stderr=log)

    def log(self, name: str) -> str:
        path = self.folder / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        for w in self.workers.values():
            w.terminate()
        for w in self.workers.values():
            try:
                w.wait(timeout=20)
            except subprocess.TimeoutExpired:
                w.kill()
                w.wait()

    async def submit(self, client: Host, provider: Path, key: str, n: int) -> str | None:
        """One `jobtrail submit` from `client`: the operation id it acknowledged, or None
        (refused, or no answer within 15 s: the client cannot know)."""
        body = json.dumps({"n": n, "_sim": IN_FLIGHT})
        args = ["--db", self.client_db, "submit", str(provider), "--body", body]
        args += ["--key", key, "--json", "--actor", CLIENT]
        proc = await asyncio.create_subprocess_exec(
            *client.run([*self.env(), JOBTRAIL, *args]),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(), SUBMIT_WAIT_S)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            self.unanswered.append(key)
            return None
        if proc.returncode != 0:
            self.unanswered.append(key)
            self.refusals.append(err.decode(errors="replace")[-500:])
            return None
        return str(json.loads(out)["operation_id"])

    async def rows(self) -> tuple[list[Operation], dict[str, list[Lease]]]:
        """Every operation, and its lease history, as the ledger has them now."""
        assert self.store is not None
        ops = await self.store.list_operations(limit=1000)
        return ops, {op.operation_id: await self.store.leases(op.operation_id) for op in ops}

    def alive(self) -> bool:
        dead = {n: w.returncode for n, w in self.workers.items() if w.poll() is not None}
        assert not dead, f"a worker died: {dead}\n" + "\n".join(
            f"--- {n}\n{self.log(n)[-3000:]}" for n in dead
        )
        return True


async def _client_waiting(rig: Rig) -> bool:
    """Whether some of the client's submits wait on the database."""
    async with await psycopg.AsyncConnection.connect(rig.admin_db, autocommit=True) as pg:
        rows = await pg.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"
            " AND wait_event_type = 'Lock'",
            (CLIENT,),
        )
        (waiting,) = await rows.fetchone() or (0,)
    return bool(waiting)


async def _creates_in_flight(rig: Rig, op_ids: set[str], owner: str | None = None) -> bool:
    """Whether creates of both kinds of `op_ids` are in flight (under `owner`'s lease)."""
    ops, leases = await rig.rows()
    rig.alive()
    flying = {
        op.provider
        for op in ops
        if op.operation_id in op_ids
        and op.inflight_attempt
        and (owner is None or max(leases[op.operation_id], key=_fence).owner == owner)
    }
    return flying == {"simulator-token", "simulator-lookup"}


def _fence(lease: object) -> int:
    return int(lease.fence)  # type: ignore[attr-defined]


async def _submit_batch(
    rig: Rig, client: Host, providers: list[Path], tag: str, acked: dict[str, str]
) -> None:
    """PER_KIND operations of each provider, by key, sent at once and retried (same key)
    until acknowledged."""
    keys = [(f"{tag}-{p.stem}-{n}", p, n) for p in providers for n in range(PER_KIND)]
    deadline = time.monotonic() + 120
    for tries in itertools.count():
        if not (pending := [k for k in keys if k[0] not in acked]):
            return
        assert time.monotonic() < deadline, f"submits never acknowledged: {pending}"
        if tries:  # a retry: after a moment, as a client would
            await asyncio.sleep(0.5)
        answers = await asyncio.gather(*(rig.submit(client, p, k, n) for k, p, n in pending))
        acked.update((k, op) for (k, _, _), op in zip(pending, answers, strict=True) if op)


async def test_partitions_make_no_second_job_no_second_owner_and_lose_no_write(
    partition_lab: Lab, tmp_path: Path
) -> None:
    net = partition_lab
    a, b, client = net.host("a"), net.host("b"), net.host("client")
    stamp = tmp_path / "faketime-a"
    # as NTP steps a clock: the monotonic clock goes on
    steps_back = faked_clock(stamp, "+0", monotonic=False)
    ahead = {"LD_PRELOAD": faketime_library(), "FAKETIME": "+60s"}
    # B's own clock is a minute ahead (faketime takes effect in its namespace), though every
    # time it writes is the ledger's (checked in _check)
    faked = float(subprocess.check_output(b.run([*Rig.env_of(ahead), "/bin/date", "+%s"])))
    assert 50 < faked - time.time() < 70, faked
    with (
        SimulatorThread(token=SECRET, host=net.api_ip) as sim,
        Forwarder(net.db_ip, ("127.0.0.1", 5432)) as forward,
    ):
        async with migrated_ledger("postgres", tmp_path) as db:
            rig = Rig(net, tmp_path, net.via(db.url, forward.port), db.url)
            async with asyncio.timeout(20):  # the ledger's migration lock is database-wide
                rig.store = await open_store(db.url)  # migrated once, before anyone starts
            providers = [_provider(tmp_path, sim.base_url, token=t) for t in (True, False)]
            acked: dict[str, str] = {}
            try:
                async with asyncio.timeout(RUN_S):  # a hang fails here, with its traceback
                    await _run(rig, net, a, b, client, providers, acked, steps_back, ahead, stamp)
            finally:
                rig.stop()
            try:
                await _check(rig, sim, acked)
            finally:
                await rig.store.close()


async def _run(
    rig: Rig,
    net: Lab,
    a: Host,
    b: Host,
    client: Host,
    providers: list[Path],
    acked: dict[str, str],
    steps_back: dict[str, str],
    ahead: dict[str, str],
    stamp: Path,
) -> None:
    # (a) A is cut from the database while its creates are in flight ...
    await _submit_batch(rig, client, providers, "one", acked)
    first = set(acked.values())
    rig.start_worker(a, steps_back)
    await until_true_async(
        lambda: _creates_in_flight(rig, first, "worker-a"), 30, "A's creates in flight"
    )
    net.cut(a, "db")
    cut_at = time.monotonic()
    stamp.write_text("-60s")  # A's clock steps back: by it, its leases have a minute more
    rig.start_worker(b, ahead)  # by B's clock, every lease has ended a minute early

    async def taken_over() -> bool:  # ... B takes every operation over once A's lease ends
        _, leases = await rig.rows()
        rig.alive()
        return all(max(leases[o], key=_fence).owner == "worker-b" for o in first)

    await until_true_async(taken_over, 60, "B took A's operations over")
    # (c) the client is cut from the database in the middle of its submits
    async with await psycopg.AsyncConnection.connect(rig.admin_db) as hold:
        # the client's submits reach the database and wait there (behind a table lock)...
        await hold.execute("LOCK TABLE operations IN EXCLUSIVE MODE")
        second_batch = asyncio.create_task(_submit_batch(rig, client, providers, "two", acked))
        await until_true_async(
            lambda: _client_waiting(rig),
            40,
            lambda: f"the client's submits never waited at the database: {rig.refusals[-3:]}",
        )
        net.cut(client, "db")  # ... its link is cut, and then they go through
    await asyncio.sleep(max(0.0, LEASE_S + 4 - (time.monotonic() - cut_at)))
    net.heal(a, "db")  # A's leases have long expired: its late writes must be refused
    await asyncio.sleep(SUBMIT_WAIT_S + 1)  # the client gave up on the submits it sent
    net.heal(client, "db")
    await second_batch
    # (b) both workers are cut from the provider while their creates are in flight
    before = set(acked.values())
    third_batch = asyncio.create_task(_submit_batch(rig, client, providers, "three", acked))
    third: set[str] = set()

    async def flying() -> bool:
        third.update(o for o in acked.values() if o not in before)
        return await _creates_in_flight(rig, third)

    await until_true_async(flying, 30, "creates in flight")
    net.cut(a, "api")
    net.cut(b, "api")
    await asyncio.sleep(7)  # past the call's timeout: the answers are lost
    net.heal(a, "api")
    net.heal(b, "api")
    await third_batch

    async def settled() -> bool:
        ops, _ = await rig.rows()
        rig.alive()
        return all(op.state.ends_automation for op in ops)

    await until_true_async(settled, 90, "every operation ended or waits for a person")


async def _check(rig: Rig, sim: SimulatorThread, acked: dict[str, str]) -> None:
    ops, leases = await rig.rows()
    by_id = {op.operation_id: op for op in ops}
    missing = {k: o for k, o in acked.items() if o not in by_id}
    assert not missing, f"acknowledged submits missing from the ledger: {missing}"
    keys = Counter(op.key for op in ops)
    assert all(n == 1 for n in keys.values()), f"a key made two operations: {keys}"
    assert len(ops) == len(acked)
    open_ops = {o.operation_id: o.state for o in ops if not o.state.ends_automation}
    assert not open_ops, f"operations neither ended nor escalated: {open_ops}"
    jobs = sim.jobs.values()
    by_ref = Counter(j.client_reference for j in jobs)
    by_key = Counter(j.idempotency_key for j in jobs if j.idempotency_key)
    second = {o: by_ref[o] for o in by_id if by_ref[o] > 1}
    assert not second, f"operations with a second remote job: {second}"
    assert all(n == 1 for n in by_key.values()), by_key
    for op_id, history in leases.items():
        ordered = sorted(history, key=_fence)
        for before, after in itertools.pairwise(ordered):  # on the database's one clock
            assert before.clock == after.clock and before.clock_expires is not None
            assert after.clock_acquired is not None
            ended = min(before.clock_expires, before.clock_released or before.clock_expires)
            assert after.clock_acquired >= ended, ("two owners at once", op_id, before, after)
    # the partitions happened as meant: A came back after its leases had passed to B and
    # was refused, the client went unanswered, creates' answers were lost
    assert "lost ownership" in rig.log("a"), rig.log("a")
    assert rig.unanswered, "the client's cut hit no submit"
    assert rig.store is not None
    lost = [
        t
        for op in ops
        if op.key and op.key.startswith("three-")
        for t in await rig.store.attempts(op.operation_id)
        if t.kind.value == "create" and t.outcome == "ambiguous"
    ]
    assert lost, "no create's answer was lost to the provider's cut"
    skews = [  # B's clock was a minute ahead, yet it wrote the database's time (one clock)
        lease.acquired_at.timestamp() - lease.clock_acquired
        for history in leases.values()
        for lease in history
        if lease.owner == "worker-b" and lease.clock_acquired is not None
    ]
    assert skews and all(abs(skew) < 5 for skew in skews), skews
    owners = {lease.owner for history in leases.values() for lease in history}
    assert owners == {"worker-a", "worker-b"}, owners  # both worked: the takeover happened
