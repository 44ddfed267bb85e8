"""The shipped `airflow` profile against a real Apache Airflow 3 server (tests/airflow_rig.py):
a DAG run triggered, observed, cancelled and collected through jobtrail's real worker, on
a SQLite ledger, in wall-clock time. Marked slow; CI requires them
(JOBTRAIL_REQUIRE_AIRFLOW=1)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from airflow_proxy import proxy
from airflow_rig import DAGS, Airflow
from jobtrail.core.model import Attempt, Operation
from jobtrail.core.states import State
from jobtrail.providers.file.config import ProviderSpec, find_provider_named, parse_provider
from jobtrail.services.runtime import Runtime, runtime

from stores import LedgerDb, migrated_ledger

# A real Airflow in wall-clock time (slow); what it proves is the profile, not the store.
pytestmark = [pytest.mark.slow, pytest.mark.sqlite_only]
TOKEN_SCRIPT = DAGS / "mint_token.py"


@dataclass
class Rig:
    server: Airflow
    rt: Runtime
    spec: ProviderSpec
    db: LedgerDb

    async def submit(self, dag_id: str, conf: dict[str, Any] | None = None) -> Operation:
        return await self.rt.ledger.submit(
            self.spec,
            {"logical_date": None, "conf": conf or {}},
            path={"dag_id": dag_id, "task_id": "work"},
            actor="test-agent",
        )

    async def finish(self, timeout: float = 120) -> None:
        """Run the real worker until no operation has anything left to do; on a timeout,
        say where each operation stands and what its calls were answered."""
        try:
            await asyncio.wait_for(self.rt.worker.run(until_idle=True), timeout)
        except TimeoutError:
            told = []
            for op in await self.rt.ledger.store.list_operations(limit=10):
                calls = [(a.kind.value, a.outcome, a.detail) for a in await self.attempts(op)]
                told.append(f"{op.operation_id} {op.state}: {calls[-6:]}")
            raise AssertionError("the worker did not finish:\n" + "\n".join(told)) from None

    async def until(self, op: Operation, *states: State, timeout: float = 60) -> Operation:
        """Drive the worker until `op` is in one of `states` (wall clock)."""
        worker = asyncio.create_task(self.rt.worker.run())
        try:
            async with asyncio.timeout(timeout):
                while (now := await self.rt.ledger.get(op.operation_id)).state not in states:
                    await asyncio.sleep(0.2)
                return now
        finally:
            self.rt.worker.stop.set()
            await worker
            self.rt.worker.stop.clear()

    async def attempts(self, op: Operation) -> list[Attempt]:
        return await self.rt.ledger.store.attempts(op.operation_id)

    async def words(self, op: Operation) -> list[str | None]:
        return [o.remote_state for o in await self.rt.ledger.store.observations(op.operation_id)]


def spec_for(
    base_url: str,
    monkeypatch: pytest.MonkeyPatch,
    edit: Callable[[dict[str, Any]], None] | None = None,
) -> ProviderSpec:
    """The shipped profile, pointed at `base_url` by its variable, polling fast."""
    monkeypatch.setenv("JOBTRAIL_AIRFLOW_BASE_URL", base_url)
    doc = dict(find_provider_named("airflow", search="/nonexistent").document)
    doc["poll"] = {"initial": "300ms", "cap": "1s", "min": "100ms"}
    doc["timeout"] = "10s"
    if edit is not None:
        edit(doc)
    return parse_provider(doc)


@asynccontextmanager
async def rig_for(
    server: Airflow, store_kind: str, tmp_path: Path, spec: ProviderSpec
) -> AsyncIterator[Rig]:
    async with (
        migrated_ledger(store_kind, tmp_path) as db,
        runtime(db.url, tmp_path / "data", worker_id="worker-1", idle_poll=0.2) as rt,
    ):
        yield Rig(server=server, rt=rt, spec=spec, db=db)


@pytest.fixture
async def rig(
    airflow_server: Airflow, store_kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Rig]:
    monkeypatch.setenv("AIRFLOW_API_TOKEN", airflow_server.token())
    spec = spec_for(airflow_server.base_url, monkeypatch, _schema)
    async with rig_for(airflow_server, store_kind, tmp_path, spec) as opened:
        yield opened


def _schema(doc: dict[str, Any]) -> None:
    doc["result"] = dict(doc["result"], schema={"type": "object", "required": ["answer", "rows"]})


async def test_a_dag_run_succeeds_with_its_xcom_value_as_the_result(rig: Rig) -> None:
    """trigger -> running -> success: the XCom `return_value`'s value is fetched, validated
    (JSON, the schema) and stored; the run's id is the operation's idempotency token."""
    op = await rig.submit("jobtrail_ok", {"rows": 3})
    await rig.finish()
    done = await rig.rt.ledger.get(op.operation_id)
    calls = [(a.kind.value, a.outcome, a.detail) for a in await rig.attempts(op)]
    assert done.state is State.SUCCEEDED, (done.state, done.remote_state, calls[-4:])
    assert done.result is not None and done.result.valid and done.result.location
    assert json.loads(await rig.rt.results.read(done.result.location)) == {"answer": 42, "rows": 3}
    assert done.remote_job_id == op.idempotency_token
    run = rig.server.run("jobtrail_ok", op.idempotency_token)
    assert run["state"] == "success" and run["conf"] == {"rows": 3}
    words = await rig.words(done)
    assert words[-1] == "success" and set(words[:-1]) <= {"queued", "running"}, words


async def test_a_run_whose_task_fails_ends_failed(rig: Rig) -> None:
    """A failing task fails the run: the operation ends `failed`, Airflow's word on record,
    and no result is claimed."""
    op = await rig.submit("jobtrail_fail")
    await rig.finish()
    done = await rig.rt.ledger.get(op.operation_id)
    assert done.state is State.FAILED, done
    assert done.remote_state == "failed" and done.result is None
    (last,) = (await rig.rt.ledger.store.history(op.operation_id))[-1:]
    assert last.to_state is State.FAILED and "observation" in last.cause
    assert rig.server.run("jobtrail_fail", op.idempotency_token)["state"] == "failed"


async def test_cancel_patches_the_run_to_failed_and_jobtrail_reports_failed(rig: Rig) -> None:
    """A cancel is sent once (PATCH state=failed with the body the profile declares); the
    run is then observed failed, so the operation ends `failed` with the cancel on record,
    never `cancelled` (Airflow has no such state)."""
    op = await rig.submit("jobtrail_slow")
    running = await rig.until(op, State.OBSERVING)
    while running.remote_state != "running":
        running = await rig.until(op, State.OBSERVING)
        await asyncio.sleep(0.3)
    await rig.rt.ledger.cancel(op.operation_id, actor="test", reason="no longer needed")
    await rig.finish()
    done = await rig.rt.ledger.get(op.operation_id)
    assert done.state is State.FAILED and done.cancel_intent is not None, done
    cancels = [a for a in await rig.attempts(op) if a.kind.value == "cancel"]
    assert len(cancels) == 1 and cancels[0].request["method"] == "PATCH", cancels
    run = rig.server.run("jobtrail_slow", op.idempotency_token)
    assert run["state"] == "failed" and run["note"] == "cancelled through jobtrail"
    path = [t.to_state for t in await rig.rt.ledger.store.history(op.operation_id)]
    assert path[-3:] == [State.CANCEL_REQUESTED, State.CANCELLING, State.FAILED], path


async def test_a_lost_create_answer_is_resolved_by_the_token_lookup(
    airflow_server: Airflow, store_kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The proxy forwards the trigger and drops its answer: jobtrail looks the run up by
    its id (the idempotency token), finds it, and never triggers a second one."""
    monkeypatch.setenv("AIRFLOW_API_TOKEN", airflow_server.token())
    async with proxy(airflow_server.base_url) as p:
        p.drop_create_answers = 1
        spec = spec_for(p.base_url, monkeypatch)
        async with rig_for(airflow_server, store_kind, tmp_path, spec) as rig:
            before = len(airflow_server.runs("jobtrail_ok"))
            op = await rig.submit("jobtrail_ok", {"rows": 1})
            await rig.finish()
            done = await rig.rt.ledger.get(op.operation_id)
            assert done.state is State.SUCCEEDED, done
            kinds = [a.kind.value for a in await rig.attempts(op)]
            path = [t.to_state for t in await rig.rt.ledger.store.history(op.operation_id)]
    assert kinds.count("create") == 1 and "reconcile" in kinds, kinds
    assert path[:3] == [State.CREATE_UNKNOWN, State.RECONCILIATION, State.ACCEPTED], path
    runs = airflow_server.runs("jobtrail_ok")
    assert len(runs) == before + 1
    assert [r["dag_run_id"] for r in runs].count(op.idempotency_token) == 1


async def test_a_409_after_a_wrong_absence_says_exists_and_the_run_is_looked_up(
    airflow_server: Airflow, store_kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trigger's answer is lost and the first lookup is answered 404 (a stale read),
    taken as proof at once here (`visible_within = "0s"`): jobtrail triggers again under
    the same run id, Airflow answers 409, which the profile declares "exists", and the
    lookup then finds the one run."""
    monkeypatch.setenv("AIRFLOW_API_TOKEN", airflow_server.token())

    def at_once(doc: dict[str, Any]) -> None:
        doc["reconcile"] = {"lookup": dict(doc["reconcile"]["lookup"], visible_within="0s")}

    async with proxy(airflow_server.base_url) as p:
        p.drop_create_answers, p.fake_run_404s = 1, 1
        spec = spec_for(p.base_url, monkeypatch, at_once)
        async with rig_for(airflow_server, store_kind, tmp_path, spec) as rig:
            before = len(airflow_server.runs("jobtrail_ok"))
            op = await rig.submit("jobtrail_ok", {"rows": 2})
            await rig.finish()
            done = await rig.rt.ledger.get(op.operation_id)
            attempts = await rig.attempts(op)
    assert done.state is State.SUCCEEDED, done
    creates = [a for a in attempts if a.kind.value == "create"]
    assert len(creates) == 2 and creates[1].detail["status"] == 409, creates
    assert creates[1].outcome == "ambiguous"
    assert attempts[attempts.index(creates[1]) + 1].kind.value == "reconcile"
    assert [r["dag_run_id"] for r in airflow_server.runs("jobtrail_ok")].count(
        op.idempotency_token
    ) == 1
    assert len(airflow_server.runs("jobtrail_ok")) == before + 1


def _token_command(
    airflow_server: Airflow, tmp_path: Path, first: float, then: float
) -> Callable[[dict[str, Any]], None]:
    count = tmp_path / "token-runs"

    def edit(doc: dict[str, Any]) -> None:
        command = [sys.executable, str(TOKEN_SCRIPT), str(count), str(first), str(then)]
        doc["auth"] = {"header": "Authorization", "prefix": "Bearer ", "command": command}

    return edit


async def test_an_expired_token_answered_401_is_fetched_again_and_never_stored(
    airflow_server: Airflow, store_kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The token command's first JWT has expired: Airflow answers 401 to the trigger, a
    fresh token is fetched, and the trigger (idempotent: the run id is the token) is sent
    once more; no token reaches the ledger."""
    from test_hostile_secrets import stored_rows

    monkeypatch.setenv("JOBTRAIL_TEST_AIRFLOW_SECRET", airflow_server.jwt_secret)
    monkeypatch.delenv("AIRFLOW_API_TOKEN", raising=False)
    spec = spec_for(
        airflow_server.base_url, monkeypatch, _token_command(airflow_server, tmp_path, -120, 600)
    )
    async with rig_for(airflow_server, store_kind, tmp_path, spec) as rig:
        op = await rig.submit("jobtrail_ok", {"rows": 4})
        await rig.finish()
        done = await rig.rt.ledger.get(op.operation_id)
        attempts = await rig.attempts(op)
        stored = await stored_rows(rig.db)
    assert done.state is State.SUCCEEDED, done
    assert (tmp_path / "token-runs").read_text() == "2"
    create = next(a for a in attempts if a.kind.value == "create")
    assert create.detail["refused_token"]["status"] == 401 and create.detail["status"] == 200
    assert [r["dag_run_id"] for r in airflow_server.runs("jobtrail_ok")].count(
        op.idempotency_token
    ) == 1
    tokens = (tmp_path / "token-runs.tokens").read_text().split()
    assert len(tokens) == 2
    leaked = [t[-24:] for t in tokens if t[-24:].encode() in stored or t.encode() in stored]
    assert not leaked, "a fetched token reached the ledger"


async def test_a_token_about_to_expire_is_fetched_again_before_any_401(
    airflow_server: Airflow, store_kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each JWT lasts 8 s: jobtrail renews it from its `exp` before it lapses, while a run
    of 20 s is watched, so Airflow never answers 401."""
    monkeypatch.setenv("JOBTRAIL_TEST_AIRFLOW_SECRET", airflow_server.jwt_secret)
    monkeypatch.delenv("AIRFLOW_API_TOKEN", raising=False)
    spec = spec_for(
        airflow_server.base_url, monkeypatch, _token_command(airflow_server, tmp_path, 8, 8)
    )
    async with rig_for(airflow_server, store_kind, tmp_path, spec) as rig:
        op = await rig.submit("jobtrail_wait")
        await rig.finish()
        done = await rig.rt.ledger.get(op.operation_id)
        attempts = await rig.attempts(op)
    assert done.state is State.SUCCEEDED, done
    assert int((tmp_path / "token-runs").read_text()) >= 3  # 20 s of 8-second tokens
    assert not [a for a in attempts if "refused_token" in (a.detail or {})]
    assert not [a for a in attempts if (a.detail or {}).get("status") == 401]
