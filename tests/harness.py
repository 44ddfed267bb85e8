"""An end-to-end rig for integration tests: the simulator on loopback, a real ledger (a
SQLite file, or a fresh schema on the PostgreSQL server of JOBTRAIL_TEST_PG: `kind`), the
real worker, and a virtual clock so backoff and deadlines cost no wall time.

Integration tests that take the `rig` fixture (tests/integration/conftest.py) run once per
store kind, as the contract tests do."""

from __future__ import annotations

import tomllib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from jobtrail.clock import VirtualClock
from jobtrail.core.model import Operation, Transition
from jobtrail.core.states import State
from jobtrail.providers.file.config import ProviderSpec, parse_provider
from jobtrail.services.runtime import Runtime, runtime
from jobtrail.simulator import Simulator

from stores import migrated_ledger

ROOT = Path(__file__).resolve().parent.parent
SECRET = "tok_live_5f2c9a8e7d6b4a31-DO-NOT-LEAK"


def simulator_doc(base_url: str) -> dict[str, Any]:
    doc = tomllib.loads((ROOT / "providers" / "simulator.toml").read_text())
    doc["base_url"] = base_url
    return doc


@dataclass
class Harness:
    sim: Simulator
    rt: Runtime
    clock: VirtualClock
    spec: ProviderSpec
    db: str  # what open_store takes: the SQLite file's path, or the PostgreSQL URL
    data: Path
    kind: str = "sqlite"

    async def submit(self, body: dict[str, Any], **options: Any) -> Operation:
        options.setdefault("actor", "test-agent")
        return await self.rt.ledger.submit(self.spec, body, **options)

    async def run(self) -> None:
        """Run the worker until no operation has anything left to do."""
        await self.rt.worker.run(until_idle=True)

    async def tick(self) -> int:
        """One round by hand: jump the clock to the next due time, claim, drive once each."""
        return await tick(self.rt, self.clock)

    async def until(self, operation: Operation, *states: State, rounds: int = 50) -> Operation:
        """Tick until the operation is in one of `states`."""
        for _ in range(rounds):
            op = await self.op(operation)
            if op.state in states:
                return op
            if not await self.tick():
                break
        raise AssertionError(f"{operation.operation_id} never reached {states}: {op.state}")

    async def op(self, operation: Operation | str) -> Operation:
        op_id = operation if isinstance(operation, str) else operation.operation_id
        return await self.rt.ledger.get(op_id)

    async def history(self, operation: Operation) -> list[Transition]:
        return await self.rt.ledger.store.history(operation.operation_id)

    async def path(self, operation: Operation) -> list[State]:
        steps = await self.history(operation)
        return [State.CREATE_PENDING, *(t.to_state for t in steps)]

    def jobs_for(self, operation: Operation) -> list[Any]:
        return [j for j in self.sim.jobs.values() if j.client_reference == operation.operation_id]

    def calls(self, operation: Operation, kind: str | None = None) -> list[Any]:
        jobs = {j.job_id for j in self.jobs_for(operation)}
        return [
            c
            for c in self.sim.calls
            if (c.client_reference == operation.operation_id or c.job_id in jobs)
            and (kind is None or c.kind == kind)
        ]


async def tick(rt: Runtime, clock: VirtualClock) -> int:
    """One worker round by hand: jump `clock` to the next due time, claim what is due and
    drive each operation once; the number driven (0: nothing is due)."""
    due = await rt.ledger.next_due()
    if due is None:
        return 0
    if due > clock.now():
        clock.advance((due - clock.now()).total_seconds())
    claims = await rt.ledger.claim("worker-1", 100, rt.runner.lease_for)
    for claim in claims:
        await rt.runner.drive(claim.operation)
    return len(claims)


@asynccontextmanager
async def harness(
    tmp_path: Path,
    *,
    edit: Callable[[dict[str, Any]], None] | None = None,
    concurrency: int = 20,
    lease_for: timedelta = timedelta(seconds=60),
    monkeypatch: Any = None,
    kind: str = "sqlite",
    results: str | None = None,
    shared_clock: bool = False,
) -> AsyncIterator[Harness]:
    """`edit` may change the provider document (capabilities, timeouts) before use; `kind`
    is the store kind ("sqlite" or "postgres", see tests/stores.py); `results` the result
    store's URL (files under the data folder when None). With `shared_clock`, the simulator
    reads the worker's virtual clock too: what it does "N seconds after" (a listing that
    lags, say) happens when the worker's waits reach it, not in real time."""
    if monkeypatch is not None:
        monkeypatch.setenv("REPORTS_API_TOKEN", SECRET)
    clock = VirtualClock()
    if shared_clock:
        sim = Simulator(token=SECRET, clock=lambda: clock.now().timestamp())
    else:
        sim = Simulator(token=SECRET)
    base_url = await sim.start()
    doc = simulator_doc(base_url)
    doc["timeout"] = "2s"
    if edit is not None:
        edit(doc)
    data = tmp_path / "data"
    try:
        async with (
            migrated_ledger(kind, tmp_path) as db,
            runtime(
                db.url,
                data,
                worker_id="worker-1",
                concurrency=concurrency,
                lease_for=lease_for,
                clock=clock,
                idle_poll=24 * 3600,
                results=results,
            ) as rt,
        ):
            spec = parse_provider(doc)
            yield Harness(sim=sim, rt=rt, clock=clock, spec=spec, db=db.url, data=data, kind=kind)
    finally:
        await sim.close()
