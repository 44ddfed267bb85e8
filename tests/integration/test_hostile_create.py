"""Hostile creates against the simulator over loopback, on a SQLite ledger: a lost
create answer followed by refused, failing or garbled retries never ends as "nothing was
created" without the provider's declared lookup saying so, and never makes a second job."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jobtrail.core.model import AttemptKind, Operation
from jobtrail.core.plan import RETRIES_BEFORE_LOOKUP
from jobtrail.core.states import REMOTE_MAY_RUN, Evidence, State
from jobtrail.providers.file.config import ProviderSpec
from jobtrail.providers.http.provider import HttpProvider
from jobtrail.providers.protocol import Reply

from cliutil import raw_bytes
from harness import SECRET, Harness, harness

# What a provider says and how it is scheduled: the same on every store (SQLite only).
pytestmark = pytest.mark.sqlite_only

S = State


def no_lookup(doc: dict[str, Any]) -> None:
    """A provider file that declares the same-token retry and no lookup by reference."""
    doc["reconcile"] = {"same_token": True}


async def creates(rig: Harness, op_id: str) -> int:
    attempts = await rig.rt.ledger.store.attempts(op_id)
    return sum(1 for a in attempts if a.kind is AttemptKind.CREATE)


@pytest.mark.parametrize("status", [409, 422, 400])
async def test_a_refused_retry_after_a_lost_answer_is_settled_by_the_lookup(
    store_kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: int
) -> None:
    """Lost answer, then "already exists" (or 400/422) to the retry: the lookup finds the one
    job and the operation succeeds with it, never `failed`."""
    async with harness(tmp_path, kind=store_kind, monkeypatch=monkeypatch) as rig:
        refusal = {"status": status, "message": "a report for this key already exists"}
        sim = {"drop_create_answer": True, "reject_retry": refusal}
        op = await rig.submit({"account": "a", "_sim": sim})
        await rig.run()
        op = await rig.op(op)
        jobs = rig.jobs_for(op)
        assert len(jobs) == 1
        assert op.state is S.SUCCEEDED and op.remote_job_id == jobs[0].job_id
        assert S.FAILED not in await rig.path(op)
        assert [t for t in await rig.history(op) if t.to_state is S.RECONCILIATION]
        assert rig.calls(op, "list")  # the lookup was asked


async def test_a_refused_retry_without_a_lookup_stops_for_a_person(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No declared lookup: a refused retry ends in needs_human (the job may run), not failed."""
    async with harness(tmp_path, kind="sqlite", monkeypatch=monkeypatch, edit=no_lookup) as rig:
        refusal = {"status": 422, "message": "duplicate request"}
        sim = {"drop_create_answer": True, "reject_retry": refusal}
        op = await rig.submit({"account": "a", "_sim": sim})
        await rig.run()
        op = await rig.op(op)
        assert op.state is S.NEEDS_HUMAN and op.state in REMOTE_MAY_RUN
        assert (await rig.history(op))[-1].evidence is Evidence.CREATE_UNPROVEN
        assert len(rig.jobs_for(op)) == 1 and await creates(rig, op.operation_id) == 2


@pytest.mark.parametrize("garble", [{"retry_malformed": True}, {"retry_error": 500}])
async def test_unreadable_retries_turn_to_the_lookup(
    store_kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, garble: dict[str, Any]
) -> None:
    """Retries answering garbage or 5xx: after RETRIES_BEFORE_LOOKUP of them the lookup is
    asked, finds the one job, and the operation succeeds with it."""
    async with harness(tmp_path, kind=store_kind, monkeypatch=monkeypatch) as rig:
        op = await rig.submit({"account": "a", "_sim": {"drop_create_answer": True, **garble}})
        await rig.run()
        op = await rig.op(op)
        jobs = rig.jobs_for(op)
        assert len(jobs) == 1
        assert op.state is S.SUCCEEDED and op.remote_job_id == jobs[0].job_id
        assert await creates(rig, op.operation_id) == 1 + RETRIES_BEFORE_LOOKUP


async def test_unreadable_retries_without_a_lookup_back_off_to_a_person(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No declared lookup: garbled retries back off until the create deadline, then
    needs_human; one job, and far fewer calls than a fixed-interval spin would make."""
    async with harness(tmp_path, kind="sqlite", monkeypatch=monkeypatch, edit=no_lookup) as rig:
        sim = {"drop_create_answer": True, "retry_malformed": True}
        op = await rig.submit({"account": "a", "_sim": sim})
        await rig.run()
        op = await rig.op(op)
        assert op.state is S.NEEDS_HUMAN
        assert (await rig.history(op))[-1].evidence is Evidence.CREATE_DEADLINE_PASSED
        assert len(rig.jobs_for(op)) == 1
        sent = await creates(rig, op.operation_id)
        assert 3 <= sent <= 12  # 2 minutes of backoff from 1 s, capped at 30 s


class RaisingProvider(HttpProvider):
    """The simulator's HTTP provider with a bug: after the request of the first call of
    `kind` went out, its answer handling raises, quoting the bearer token."""

    def __init__(self, spec: ProviderSpec, session: Any, kind: AttemptKind) -> None:
        super().__init__(spec, session)
        self.kind, self.raised = kind, 0

    async def call(self, kind: AttemptKind, op: Operation) -> Reply:
        reply = await super().call(kind, op)
        if kind is self.kind and not self.raised:
            self.raised += 1
            raise KeyError(f"parser bug near 'Bearer {SECRET}'")
        return reply


@pytest.mark.parametrize("kind", [AttemptKind.CREATE, AttemptKind.STATUS])
async def test_a_provider_that_raises_is_a_recorded_provider_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: AttemptKind
) -> None:
    """An exception inside a provider's call is recorded on its attempt (type and redacted
    message) and handled as an unknown outcome of that call, not as a worker stopped
    mid-call; the operation still ends with exactly one job."""
    async with harness(tmp_path, kind="sqlite", monkeypatch=monkeypatch) as rig:
        provider = RaisingProvider(rig.spec, rig.rt.providers.session(), kind)
        rig.rt.providers.register(provider)
        op = await rig.submit({"account": "a"})
        await rig.run()
        op = await rig.op(op)
        assert provider.raised == 1
        assert op.state is S.SUCCEEDED and len(rig.jobs_for(op)) == 1
        attempts = await rig.rt.ledger.store.attempts(op.operation_id)
        assert all(a.finished_at is not None for a in attempts)  # none left "interrupted"
        (broken,) = [a for a in attempts if a.detail and "exception" in a.detail]
        assert broken.kind is kind and broken.outcome == "ambiguous"
        assert broken.detail["exception"] == "KeyError"
        assert "parser bug" in broken.detail["error"] and SECRET not in broken.detail["error"]
        if kind is AttemptKind.CREATE:
            assert (await rig.path(op))[1] is S.CREATE_UNKNOWN
    assert SECRET.encode() not in raw_bytes(tmp_path)
