"""Code providers through `jobtrail.Client`, on SQLite and PostgreSQL: submitted by name,
driven only where they are present, their exceptions and echoed secrets handled by jobtrail."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import jobtrail
from jobtrail.core.model import ProviderKind
from jobtrail.services.runtime import runtime
from jobtrail.testing import (
    AttemptKind,
    Capabilities,
    RemoteStatus,
    Reply,
    ScriptedCall,
    ScriptedProvider,
    jobtrail_simulator,  # noqa: F401 (the fixture under test)
    outcomes,
)

from stores import migrated_ledger

SECRET = "sk_code_provider_9f8e7d6c5b4a-NEVER-STORED"


def succeeding(call: ScriptedCall) -> outcomes.CallOutcome:
    """A provider that accepts the create and reports the job done on the first read."""
    if call.kind is AttemptKind.CREATE:
        return outcomes.Accepted(
            job_id=f"job-{call.operation.operation_id}",
            remote_state="queued",
            remote_status=RemoteStatus.RUNNING,
        )
    return outcomes.Observed(remote_state="done", remote_status=RemoteStatus.SUCCEEDED)


async def _audit_text(store: object) -> str:
    rows = await store.audit_rows()  # type: ignore[attr-defined]
    return json.dumps([row.entry for row in rows], default=str)


async def test_submitted_by_name_and_driven_to_its_end(store_kind: str, tmp_path: Path) -> None:
    """A code provider object is submitted to by name: the operation records kind, name and
    version, and the client's worker drives it with that provider to succeeded."""
    provider = ScriptedProvider(succeeding, name="scripted", version="3.1")
    async with (
        migrated_ledger(store_kind, tmp_path) as db,
        jobtrail.Client(db.url, data_dir=tmp_path, providers=[provider]) as jt,
    ):
        op = await jt.submit("scripted", {"n": 1}, key="by-name")
        assert (op.provider, op.provider_kind, op.provider_version) == (
            "scripted",
            ProviderKind.CODE,
            "3.1",
        )
        done = await jt.wait(op.operation_id, timeout=30)
        assert done.state is jobtrail.State.SUCCEEDED
        assert done.remote_job_id == f"job-{op.operation_id}"
        creates = provider.calls_of(AttemptKind.CREATE)
        assert [c.operation.idempotency_token for c in creates] == [op.idempotency_token]


async def test_a_worker_without_the_provider_never_claims_it(
    store_kind: str, tmp_path: Path
) -> None:
    """A worker lacking the code provider runs until idle without claiming its operation
    (no lease, no attempt); one that has it then drives it."""
    provider = ScriptedProvider(succeeding)
    async with migrated_ledger(store_kind, tmp_path) as db:
        async with jobtrail.Client(
            db.url, data_dir=tmp_path, providers=[provider], worker=False
        ) as jt:
            op = await jt.submit("scripted", {"n": 2})
        async with runtime(db.url, tmp_path, worker_id="worker:without") as rt:
            stats = await rt.worker.run(until_idle=True)
            assert stats.claimed == 0
            assert await rt.ledger.store.leases(op.operation_id) == []
            assert await rt.ledger.store.attempts(op.operation_id) == []
        assert provider.calls == []
        async with runtime(db.url, tmp_path, worker_id="worker:with", providers=[provider]) as rt:
            stats = await rt.worker.run(until_idle=True)
            assert stats.claimed >= 1
            done = await rt.ledger.get(op.operation_id)
            assert done.state is jobtrail.State.SUCCEEDED


async def test_an_exception_in_call_is_an_unknown_outcome_on_the_attempt(
    store_kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A create whose call raises is recorded on its attempt (type, redacted message) and
    handled as a create with an unknown outcome: the same token is sent again, never a new
    one, and the operation still ends with one job."""
    monkeypatch.setenv("SCRIPTED_TOKEN", SECRET)

    def raising_once(call: ScriptedCall) -> outcomes.CallOutcome:
        if call.kind is AttemptKind.CREATE and call.number == 1:
            raise RuntimeError(f"SDK bug while signing with {SECRET}")
        return succeeding(call)

    provider = ScriptedProvider(raising_once, secret_env=("SCRIPTED_TOKEN",))
    async with migrated_ledger(store_kind, tmp_path) as db:
        async with jobtrail.Client(db.url, data_dir=tmp_path, providers=[provider]) as jt:
            op = await jt.submit("scripted", {"n": 3})
            done = await jt.wait(op.operation_id, timeout=30)
            assert done.state is jobtrail.State.SUCCEEDED
            store = jt._opened.ledger.store
            attempts = await store.attempts(op.operation_id)
            history = await store.history(op.operation_id)
            audit = await _audit_text(store)
        (broken,) = [a for a in attempts if a.detail and "exception" in a.detail]
        assert broken.kind is AttemptKind.CREATE and broken.outcome == "ambiguous"
        assert broken.detail["exception"] == "RuntimeError"
        assert "SDK bug while signing" in broken.detail["error"]
        assert SECRET not in json.dumps(broken.detail) and SECRET not in audit
        assert jobtrail.State.CREATE_UNKNOWN in [t.to_state for t in history]
        tokens = {c.operation.idempotency_token for c in provider.calls_of(AttemptKind.CREATE)}
        assert tokens == {op.idempotency_token}


async def test_a_secret_echoed_in_reply_detail_is_never_stored(
    store_kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever a code provider returns for the record passes the ledger's redaction: a
    secret (named in secret_env) echoed in Reply.detail, in a state word or in a credential
    field never reaches the attempts, observations, operation or audit log."""
    monkeypatch.setenv("SCRIPTED_TOKEN", SECRET)

    def echoing(call: ScriptedCall) -> Reply:
        outcome = succeeding(call)
        if isinstance(outcome, outcomes.Observed):
            outcome = outcomes.Observed(
                remote_state=f"done ({SECRET})", remote_status=RemoteStatus.SUCCEEDED
            )
        detail = {"echo": f"signed with {SECRET}", "api_key": "plain-field-value-123"}
        return Reply(outcome=outcome, detail=detail)

    provider = ScriptedProvider(echoing, secret_env=("SCRIPTED_TOKEN",))
    async with migrated_ledger(store_kind, tmp_path) as db:
        async with jobtrail.Client(db.url, data_dir=tmp_path, providers=[provider]) as jt:
            op = await jt.submit("scripted", {"n": 4})
            done = await jt.wait(op.operation_id, timeout=30)
            store = jt._opened.ledger.store
            attempts = await store.attempts(op.operation_id)
            observations = await store.observations(op.operation_id)
            audit = await _audit_text(store)
            story = await jt.explain(op.operation_id)
        assert done.state is jobtrail.State.SUCCEEDED
        recorded = json.dumps(
            [a.detail for a in attempts] + [o.remote_state for o in observations], default=str
        )
        assert "[redacted]" in recorded and "signed with" in recorded
        for text in (recorded, audit, story, repr(done)):
            assert SECRET not in text
            assert "plain-field-value-123" not in text
    if store_kind == "sqlite":
        raw = b"".join(p.read_bytes() for p in tmp_path.rglob("ledger.db*"))
        assert SECRET.encode() not in raw


@pytest.mark.usefixtures("jobtrail_simulator")
async def test_the_simulator_fixture_serves_the_simulator_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`jobtrail_simulator` starts the simulator and points the shipped profile at it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JOBTRAIL_PROVIDERS", raising=False)
    async with jobtrail.Client(tmp_path / "t.db", data_dir=tmp_path / "data") as jt:
        op = await jt.submit("simulator", {"account": "acct_1"})
        op = await jt.wait(op.operation_id, timeout=30)
        assert op.state is jobtrail.State.SUCCEEDED


async def test_retry_as_new_keeps_the_code_provider(store_kind: str, tmp_path: Path) -> None:
    """A create lost by a provider with no way to reconcile stops for a person; retry-as-new
    records a new operation for the same code provider, version and settings, new token."""

    def lost_then_fine(call: ScriptedCall) -> outcomes.CallOutcome:
        if call.kind is AttemptKind.CREATE and call.operation.key == "lost":
            return outcomes.Ambiguous(reason="connection reset after sending")
        return succeeding(call)

    provider = ScriptedProvider(lost_then_fine, capabilities=jobtrail_caps())
    async with (
        migrated_ledger(store_kind, tmp_path) as db,
        jobtrail.Client(db.url, data_dir=tmp_path, providers=[provider]) as jt,
    ):
        op = await jt.submit("scripted", {"n": 5}, key="lost")
        stuck = await jt.wait(op.operation_id, timeout=30)
        assert stuck.state is jobtrail.State.NEEDS_HUMAN
        new = await jt.resolve(op.operation_id, "retry-as-new", reason="checked: no job")
        assert new.operation_id != op.operation_id
        assert (new.provider, new.provider_kind, new.provider_version) == (
            "scripted",
            ProviderKind.CODE,
            op.provider_version,
        )
        assert new.provider_config == op.provider_config
        assert new.idempotency_token != op.idempotency_token
        done = await jt.wait(new.operation_id, timeout=30)
        assert done.state is jobtrail.State.SUCCEEDED


def jobtrail_caps() -> Capabilities:
    """No idempotency token the provider honours, no lookup: nothing can reconcile."""
    return Capabilities(cancel=True)
