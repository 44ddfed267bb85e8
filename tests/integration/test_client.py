"""`jobtrail.Client` and `SyncClient` against the real simulator over loopback, on a real
SQLite file and (where marked) PostgreSQL: submit, wait, result, cancel, find, list,
explain, resolve, extend, and waiting on workers that run elsewhere."""

from __future__ import annotations

import asyncio
import hashlib
import tomllib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import jobtrail
from jobtrail import Client, State, SyncClient
from jobtrail.providers.file.config import ProviderSpec, parse_provider
from jobtrail.services.runtime import runtime
from jobtrail.simulator import Simulator
from jobtrail.simulator.thread import SimulatorThread

from stores import migrated_ledger
from waits import until_true_async

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "client-test-token-not-a-real-one"
POLL_QUICKLY = '\n[poll]\ninitial = "50ms"\ncap = "200ms"\n'


def spec_for(base_url: str) -> ProviderSpec:
    doc = tomllib.loads((ROOT / "providers" / "simulator.toml").read_text(encoding="utf-8"))
    # Real time: poll the loopback simulator quickly, and give up on a lost answer soon.
    doc |= {"base_url": base_url, "timeout": "1s", "poll": {"initial": "50ms", "cap": "200ms"}}
    return parse_provider(doc)


@pytest.fixture
async def sim(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Simulator]:
    monkeypatch.setenv("REPORTS_API_TOKEN", TOKEN)
    simulator = Simulator(token=TOKEN)
    await simulator.start()
    yield simulator
    await simulator.close()


@pytest.fixture
def spec(sim: Simulator) -> ProviderSpec:
    return spec_for(sim.base_url)


def jobs_of(sim: Simulator, op: jobtrail.Operation) -> list[Any]:
    return [j for j in sim.jobs.values() if j.client_reference == op.operation_id]


def client(tmp_path: Path, db: str | None = None, **options: Any) -> Client:
    return Client(db or str(tmp_path / "ledger.db"), data_dir=tmp_path / "data", **options)


async def test_submit_wait_result_find_list_explain(
    store_kind: str, tmp_path: Path, sim: Simulator, spec: ProviderSpec
) -> None:
    """One operation runs to a validated result through the Client on either store, and a
    second submit under its key returns it without a second remote job."""
    async with migrated_ledger(store_kind, tmp_path) as db, client(tmp_path, db.url) as jt:
        op = await jt.submit(spec, {"account": "acct_1", "items": 4}, key="feb", reason="test")
        assert op.state is State.CREATE_PENDING and op.actor.startswith("python:")
        done = await jt.wait(op.operation_id, timeout=30)
        assert done.state is State.SUCCEEDED
        result = await jt.result(op.operation_id)
        assert result.valid and result.state is State.SUCCEEDED
        assert result.items is not None and result.items.total == 4
        content = result.read_bytes()
        assert hashlib.sha256(content).hexdigest() == result.sha256
        assert result.text().count("\n") >= 4 and result.path is not None
        again = await jt.submit(spec, {"account": "acct_1", "items": 4}, key="feb", reason="test")
        assert again.operation_id == op.operation_id
        assert len(jobs_of(sim, op)) == 1
        found = await jt.find("feb")
        assert found is not None and found.operation_id == op.operation_id
        assert await jt.find("no-such-key") is None
        # One contract (get raises, find answers None), and both take an id or a key.
        by_id = await jt.find(op.operation_id)
        assert by_id is not None and by_id.operation_id == op.operation_id
        assert (await jt.get("feb")).operation_id == op.operation_id
        with pytest.raises(jobtrail.NotFound, match="no operation with the id or key"):
            await jt.get("no-such-key")
        listed = await jt.list(states=["succeeded"], limit=5)
        assert [o.operation_id for o in listed] == [op.operation_id]
        assert await jt.list(states=[State.FAILED]) == []
        story = await jt.explain(op.operation_id)
        assert done.remote_job_id and done.remote_job_id in story


async def test_changed_result_is_never_handed_out(
    tmp_path: Path, sim: Simulator, spec: ProviderSpec
) -> None:
    """A stored result file changed after validation comes back invalid, with no content."""
    async with client(tmp_path) as jt:
        op = await jt.wait((await jt.submit(spec, {"account": "a"})).operation_id, timeout=30)
        first = await jt.result(op.operation_id)
        assert first.path is not None
        first.path.write_bytes(b"forged,rows\n")
        with pytest.raises(jobtrail.ResultCorrupted):
            first.read_bytes()
        again = await jt.result(op.operation_id)
    assert not again.valid and "changed since it was validated" in again.problems[-1]
    assert again.path is None and again.content is None
    with pytest.raises(jobtrail.ResultError):
        again.read_bytes()


async def test_cancel_before_the_job_id_is_known(
    tmp_path: Path, sim: Simulator, spec: ProviderSpec
) -> None:
    """A cancel recorded right after submit is carried out once the job exists: cancelled,
    with one cancel call; or, when the worker had not sent the create yet, the operation is
    withdrawn and nothing is ever sent. No result is offered either way."""
    async with client(tmp_path) as jt:
        op = await jt.submit(spec, {"account": "a", "_sim": {"never_finish": True}})
        cancelling = await jt.cancel(op.operation_id, "changed my mind")
        assert cancelling.cancel_intent is not None
        assert cancelling.cancel_intent.reason == "changed my mind"
        done = await jt.wait(op.operation_id, timeout=30)
        if done.state is State.FAILED:  # the worker had not sent the create: withdrawn
            assert jobs_of(sim, op) == []
            assert done.remote_job_id is None
        else:
            assert done.state is State.CANCELLED
            (job,) = jobs_of(sim, op)
            assert job.cancel_requests == 1
        with pytest.raises(jobtrail.ActionRefused, match="has no result"):
            await jt.result(op.operation_id)
        with pytest.raises(jobtrail.InvalidInput):
            await jt.cancel(op.operation_id, "  ")


async def test_wait_timeout_and_extend(tmp_path: Path, sim: Simulator, spec: ProviderSpec) -> None:
    """`wait` gives up with WaitTimedOut (a TimeoutError) while the job runs on; past the
    result deadline `extend` resumes observing, and a cancel then ends it."""
    async with client(tmp_path) as jt:
        op = await jt.submit(
            spec, {"account": "a", "_sim": {"never_finish": True}}, result_deadline="1s"
        )
        with pytest.raises(TimeoutError):
            await jt.wait(op.operation_id, timeout=0.05)
        timed_out = await jt.wait(op.operation_id, timeout=30)
        assert timed_out.state is State.RESULT_TIMED_OUT
        with pytest.raises(jobtrail.InvalidInput, match="exactly one"):
            await jt.extend(op.operation_id, reason="r")
        resumed = await jt.extend(op.operation_id, result_deadline="1h", reason="still needed")
        assert resumed.state is State.OBSERVING
        assert resumed.result_deadline > timed_out.result_deadline
        await jt.cancel(op.operation_id, "enough")
        assert (await jt.wait(op.operation_id, timeout=30)).state is State.CANCELLED


async def test_resolve_adopts_one_of_two_job_ids(
    tmp_path: Path, sim: Simulator, spec: ProviderSpec
) -> None:
    """A token answered with two job ids stops for a human; `resolve` adopts one and the
    operation runs on to its result."""
    async with client(tmp_path) as jt:
        faults = {"drop_create_answer": True, "different_id_on_retry": True}
        op = await jt.submit(spec, {"account": "a", "_sim": faults})
        stuck = await jt.wait(op.operation_id, timeout=30)
        assert stuck.state is State.NEEDS_HUMAN and len(stuck.conflicting_job_ids) == 2
        with pytest.raises(jobtrail.InvalidInput, match="unknown decision"):
            await jt.resolve(op.operation_id, "shrug", reason="r")
        chosen = stuck.conflicting_job_ids[0]
        adopted = await jt.resolve(op.operation_id, "adopt", job_id=chosen, reason="support")
        assert adopted.remote_job_id == chosen
        done = await jt.wait(op.operation_id, timeout=30)
        assert done.state is State.SUCCEEDED and done.remote_job_id == chosen


async def test_retry_as_new_returns_the_new_operation(
    tmp_path: Path, sim: Simulator, spec: ProviderSpec
) -> None:
    """`resolve(..., "retry-as-new")` marks the old operation failed and returns the new one."""
    async with client(tmp_path) as jt:
        faults = {"drop_create_answer": True, "different_id_on_retry": True}
        op = await jt.submit(spec, {"account": "a", "_sim": faults})
        await jt.wait(op.operation_id, timeout=30)
        new = await jt.resolve(op.operation_id, "retry-as-new", reason="start over", actor="bob")
        assert new.operation_id != op.operation_id and new.actor == "bob"
        assert (await jt.get(op.operation_id)).state is State.FAILED


async def test_worker_false_waits_for_a_worker_elsewhere(
    tmp_path: Path, sim: Simulator, spec: ProviderSpec
) -> None:
    """A client opened with worker=False sends nothing itself; `wait` follows the ledger
    while a separate worker drives the operation."""
    db = str(tmp_path / "ledger.db")
    async with client(tmp_path, db, worker=False) as jt:
        op = await jt.submit(spec, {"account": "a"})
        with pytest.raises(jobtrail.WaitTimedOut, match="jobtrail worker"):
            await jt.wait(op.operation_id, timeout=0.3)
        assert sim.calls == [] and (await jt.get(op.operation_id)).state is State.CREATE_PENDING
        async with runtime(db, tmp_path / "data", worker_id="worker-elsewhere") as rt:
            elsewhere = asyncio.create_task(rt.worker.run())
            try:
                done = await jt.wait(op.operation_id, timeout=30)
            finally:
                rt.worker.stop.set()
                await elsewhere
        assert done.state is State.SUCCEEDED and done.lease_owner in (None, "worker-elsewhere")
        assert (await jt.result(op.operation_id)).valid


async def test_closed_client_says_so(tmp_path: Path) -> None:
    """A client used outside `async with` raises ClientClosed with what to do."""
    jt = client(tmp_path)
    with pytest.raises(jobtrail.ClientClosed, match="async with"):
        await jt.get("op_x")
    async with jt:
        with pytest.raises(jobtrail.NotFound):
            await jt.get("op_x")
        with pytest.raises(jobtrail.InvalidInput, match="states are"):
            await jt.list(states=["nonsense"])
    with pytest.raises(jobtrail.ClientClosed):
        await jt.get("op_x")


def test_sync_client_from_plain_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SyncClient runs the Client's methods without an event loop in the calling code."""
    monkeypatch.setenv("REPORTS_API_TOKEN", TOKEN)
    with SimulatorThread(token=TOKEN) as sim:
        spec = spec_for(sim.base_url)
        with SyncClient(str(tmp_path / "ledger.db"), data_dir=tmp_path / "data") as jt:
            op = jt.submit(spec, {"account": "a", "items": 2}, key="sync")
            done = jt.wait(op.operation_id, timeout=30)
            assert done.state is State.SUCCEEDED
            result = jt.result(op.operation_id)
            assert result.valid and result.items is not None and result.items.total == 2
            assert jt.find("sync") == done
            assert done.operation_id in jt.explain(op.operation_id)
            with pytest.raises(jobtrail.NotFound):
                jt.get("op_missing")
        with pytest.raises(jobtrail.ClientClosed):
            jt.get(op.operation_id)
        assert len([j for j in sim.jobs.values() if j.client_reference == op.operation_id]) == 1


def test_a_provider_module_that_does_not_import_fails_the_open(tmp_path: Path) -> None:
    """Code provider modules are loaded when the client opens: a bad one is one clear line."""
    with pytest.raises(jobtrail.ProviderConfigError) as caught:
        SyncClient(str(tmp_path / "l.db"), provider_modules=["my_missing_provider_xyz"])
    assert str(caught.value) == (
        "--provider-module my_missing_provider_xyz: cannot import it: ModuleNotFoundError: "
        "No module named 'my_missing_provider_xyz'"
    )


async def test_client_keys_the_audit_chain_like_the_cli(
    tmp_path: Path, sim: Simulator, spec: ProviderSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With JOBTRAIL_AUDIT_KEY set, the client's audit entries verify with that key only."""
    from jobtrail.core.audit import verify
    from jobtrail.store import open_store

    monkeypatch.setenv("JOBTRAIL_AUDIT_KEY", "client-audit-key")
    async with client(tmp_path) as jt:
        op = await jt.submit(spec, {"account": "a"})
        await jt.wait(op.operation_id, timeout=30)
    store = await open_store(str(tmp_path / "ledger.db"))
    try:
        rows = await store.audit_rows()
    finally:
        await store.close()
    assert len(rows) > 3
    assert verify(rows, b"client-audit-key").ok
    assert not verify(rows, None).ok


async def test_sync_client_inside_a_running_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SyncClient works where the caller's thread already runs an event loop (a notebook),
    with the provider given as a provider file's path."""
    monkeypatch.setenv("REPORTS_API_TOKEN", TOKEN)
    asyncio.get_running_loop()  # the situation asyncio.run refuses
    with SimulatorThread(token=TOKEN) as sim:
        doc = (ROOT / "providers" / "simulator.toml").read_text(encoding="utf-8")
        provider_file = tmp_path / "reports.toml"
        provider_file.write_text(
            doc.replace('"http://127.0.0.1:8700"', f'"{sim.base_url}"') + POLL_QUICKLY
        )
        with SyncClient(tmp_path / "ledger.db", data_dir=tmp_path / "data") as jt:
            by_path = jt.submit(provider_file, {"account": "a"}, key="k1")
            by_text = jt.submit(str(provider_file), {"account": "b"}, key="k2")
            assert jt.wait(by_path.operation_id, timeout=30).state is State.SUCCEEDED
            assert jt.wait(by_text.operation_id, timeout=30).state is State.SUCCEEDED
            assert {o.key for o in jt.list()} == {"k1", "k2"}


async def test_extend_the_cancel_deadline_of_an_unconfirmed_cancel(tmp_path: Path) -> None:
    """`extend(cancel_deadline=...)` records the cancel-deadline decision: a cancel the
    provider had not confirmed in time is followed again, and ends cancelled once it is."""
    from jobtrail.testing import AttemptKind, RemoteStatus, ScriptedProvider, VirtualClock
    from jobtrail.testing import outcomes as o

    stopped: list[bool] = []

    def vendor(call: Any) -> Any:
        if call.kind is AttemptKind.CREATE:
            return o.Accepted(
                job_id="job-1", remote_state="running", remote_status=RemoteStatus.RUNNING
            )
        if call.kind is AttemptKind.CANCEL:
            return o.CancelAcknowledged()
        if stopped:
            return o.Observed(remote_state="cancelled", remote_status=RemoteStatus.CANCELLED)
        return o.Observed(remote_state="running", remote_status=RemoteStatus.RUNNING)

    fake = ScriptedProvider(vendor, name="vendor", deadlines={"cancel": "10m"})
    async with Client(tmp_path / "l.db", providers=[fake], clock=VirtualClock()) as jt:
        op = await jt.submit("vendor", {"n": 1}, key="unconfirmed")
        # Cancel once the job exists: a cancel before the create is sent withdraws it.
        await until_true_async(
            lambda: _has_job(jt, op.operation_id), timeout=30, what="the create accepted"
        )
        await jt.cancel(op.operation_id, "not needed")
        op = await jt.wait(op.operation_id, timeout=30)
        assert op.state is State.CANCELLATION_UNCONFIRMED
        stopped.append(True)
        op = await jt.extend(op.operation_id, cancel_deadline="1h", reason="still stopping")
        assert op.state is not State.CANCELLATION_UNCONFIRMED
        assert (await jt.wait(op.operation_id, timeout=30)).state is State.CANCELLED


async def _has_job(jt: Client, operation_id: str) -> bool:
    return (await jt.get(operation_id)).remote_job_id is not None
