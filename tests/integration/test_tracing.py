"""One trace per operation: every call the worker makes for an operation (create, status,
cancel, result) carries the operation's trace id, in the provider's trace header and in the
W3C `traceparent`, each call in its own span. The idempotency token is never a trace id.

The in-process worker drives real operations against the simulator over loopback HTTP, with
a real SQLite ledger. (opentelemetry-sdk is not a dependency, so spans are not inspected
here; the headers are what the provider sees.)
"""

from __future__ import annotations

import tomllib
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from jobtrail.clock import VirtualClock
from jobtrail.core.model import Operation
from jobtrail.core.states import State
from jobtrail.ledger import Ledger
from jobtrail.providers.file.config import ProviderSpec, parse_provider
from jobtrail.providers.registry import ProviderRegistry
from jobtrail.results.files import FileResults
from jobtrail.simulator import CallRecord, Simulator
from jobtrail.store import open_store
from jobtrail.worker.loop import Worker
from jobtrail.worker.runner import Runner

REPO = Path(__file__).resolve().parents[2]
TOKEN = "trace-test-token"
LEASE = timedelta(seconds=60)


@dataclass
class Rig:
    sim: Simulator
    ledger: Ledger
    spec: ProviderSpec
    runner: Runner
    worker: Worker
    clock: VirtualClock

    async def submit(self, sim_faults: dict[str, Any]) -> Operation:
        body = {"account": "acct_218", "_sim": sim_faults}
        return await self.ledger.submit(self.spec, body, actor="test")

    async def drive_one(self, op: Operation) -> None:
        """Claim and drive one operation until it waits, as `jobtrail run` does."""
        store = self.ledger.store
        (claim,) = await store.claim_due("test", self.clock.now(), 1, LEASE, op.operation_id)
        await self.runner.drive(replace(claim.operation, next_poll_at=claim.was_due))

    def calls_of(self, op: Operation) -> list[CallRecord]:
        return [
            call
            for call in self.sim.calls
            if call.client_reference == op.operation_id
            or (call.job_id is not None and call.job_id == op.remote_job_id)
        ]


@pytest.fixture
async def rig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Rig]:
    monkeypatch.setenv("REPORTS_API_TOKEN", TOKEN)
    sim = Simulator(token=TOKEN)
    await sim.start()
    store = await open_store(str(tmp_path / "ledger.db"))
    registry = ProviderRegistry()
    try:
        clock = VirtualClock()
        ledger = Ledger(store, clock=clock, group_commit=True)
        document = tomllib.loads((REPO / "providers" / "simulator.toml").read_text())
        spec = parse_provider({**document, "base_url": sim.base_url})
        runner = Runner(ledger, registry, FileResults(tmp_path), actor="worker", lease_for=LEASE)
        worker = Worker(runner, clock, concurrency=4)
        yield Rig(sim, ledger, spec, runner, worker, clock)
    finally:
        await registry.close()
        await store.close()
        await sim.close()


def assert_one_trace(op: Operation, calls: list[CallRecord]) -> None:
    """Every call carries op.trace_id in X-Trace-ID and traceparent, each with its own span
    id; the idempotency token appears only as the create's Idempotency-Key."""
    assert calls
    spans = set()
    for call in calls:
        assert call.trace_id == op.trace_id, call
        assert call.traceparent is not None
        version, trace, span, flags = call.traceparent.split("-")
        assert (version, trace, flags) == ("00", op.trace_id, "01")
        assert len(span) == 16 and int(span, 16) != 0
        spans.add(span)
        assert op.idempotency_token not in (call.trace_id, trace, span)
        assert call.idempotency_key in (None, op.idempotency_token)
    assert len(spans) == len(calls)  # one span per call, all in the operation's trace


async def test_create_status_cancel_and_result_calls_carry_the_operations_trace_id(
    rig: Rig,
) -> None:
    """One operation is cancelled and one succeeds; each one's create, status, cancel and
    result calls all carry that operation's own trace id, never its token."""
    doomed = await rig.submit({"never_finish": True})
    kept = await rig.submit({})
    await rig.drive_one(doomed)
    await rig.ledger.cancel(doomed.operation_id, actor="test", reason="not needed any more")
    await rig.worker.run(until_idle=True)

    doomed = await rig.ledger.get(doomed.operation_id)
    kept = await rig.ledger.get(kept.operation_id)
    assert (doomed.state, kept.state) == (State.CANCELLED, State.SUCCEEDED)
    assert doomed.trace_id != kept.trace_id
    for op, kinds in (
        (doomed, {"create", "status", "cancel"}),
        (kept, {"create", "status", "result"}),
    ):
        calls = rig.calls_of(op)
        assert {call.kind for call in calls} == kinds
        assert_one_trace(op, calls)
        create = next(call for call in calls if call.kind == "create")
        assert create.idempotency_key == op.idempotency_token != op.trace_id
    tokens = {doomed.idempotency_token, kept.idempotency_token}
    assert not tokens & {call.trace_id for call in rig.sim.calls}


async def test_a_retried_create_keeps_the_trace_id_and_not_the_token(rig: Rig) -> None:
    """A create whose answer was lost is retried with the same token and the same trace id;
    the retry, the polls and the result stay in that one trace."""
    op = await rig.submit({"drop_create_answer": 1})
    await rig.worker.run(until_idle=True)
    op = await rig.ledger.get(op.operation_id)
    assert op.state is State.SUCCEEDED
    calls = rig.calls_of(op)
    creates = [call for call in calls if call.kind == "create"]
    assert len(creates) == 2 and {c.idempotency_key for c in creates} == {op.idempotency_token}
    assert_one_trace(op, calls)
