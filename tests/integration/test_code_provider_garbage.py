"""A code provider that breaks its contract (issue 19): it returns garbage in place of a
Reply (None, a dict, a Reply of no outcome or of a local outcome, an outcome that answers
another call: an Observed to a create, an Accepted to a status read) or raises what is not an
Exception (CancelledError, SystemExit, KeyboardInterrupt). Each such create is recorded on
its attempt as a call whose outcome is unknown, with a word saying what came back; the
worker goes on, and the operation ends with one job. On SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import jobtrail
from jobtrail.core.model import Operation
from jobtrail.services.runtime import runtime
from jobtrail.testing import (
    AttemptKind,
    RemoteStatus,
    Reply,
    ScriptedCall,
    ScriptedProvider,
    outcomes,
)

from stores import migrated_ledger


@dataclass
class Raw(ScriptedProvider):
    """A ScriptedProvider whose handler's answer is returned as it is, garbage included."""

    async def call(self, kind: AttemptKind, op: Operation) -> Any:
        number = 1 + sum(
            1 for c in self.calls if c.kind is kind and c.operation.operation_id == op.operation_id
        )
        call = ScriptedCall(kind=kind, operation=op, number=number)
        self.calls.append(call)
        return self.handler(call)


def _cancelled() -> Any:
    raise asyncio.CancelledError


def _exit() -> Any:
    raise SystemExit(3)


def _interrupt() -> Any:
    raise KeyboardInterrupt


def _accepted(call: ScriptedCall) -> Reply:
    return Reply(
        outcome=outcomes.Accepted(
            job_id=f"job-{call.operation.operation_id}",
            remote_state="queued",
            remote_status=RemoteStatus.RUNNING,
        )
    )


def _done() -> Reply:
    return Reply(
        outcome=outcomes.Observed(remote_state="done", remote_status=RemoteStatus.SUCCEEDED)
    )


async def _drive(provider: Raw, store_kind: str, tmp_path: Path) -> tuple[Any, Any, Any, Any]:
    """Submit one operation, then let one worker run until idle: (the submitted operation,
    the operation as it ended, its attempts, the worker's stats)."""
    async with migrated_ledger(store_kind, tmp_path) as db:
        async with jobtrail.Client(
            db.url, data_dir=tmp_path, providers=[provider], worker=False
        ) as jt:
            op = await jt.submit("scripted", {"n": 1})
        # The worker that meets the garbage lives on: the same run drives the operation on.
        async with runtime(db.url, tmp_path, worker_id="worker:1", providers=[provider]) as rt:
            stats = await rt.worker.run(until_idle=True)
            done = await rt.ledger.get(op.operation_id)
            attempts = await rt.ledger.store.attempts(op.operation_id)
    return op, done, attempts, stats


FIRST_CREATE: dict[str, tuple[Any, str]] = {
    "none": (lambda: None, "returned garbage for the create call: None"),
    "dict": (lambda: {"job_id": "j-1"}, "returned garbage for the create call: a dict"),
    "no outcome": (lambda: Reply(outcome=None), "a Reply with no outcome"),
    "local outcome": (
        lambda: Reply(outcome=outcomes.DeadlinePassed(deadline=outcomes.Deadline.CREATE)),  # type: ignore[arg-type]
        "a Reply whose outcome is a DeadlinePassed",
    ),
    "Observed to a create": (
        lambda: Reply(
            outcome=outcomes.Observed(remote_state="done", remote_status=RemoteStatus.SUCCEEDED)
        ),
        "answered the create call with Observed, which cannot answer it in create_pending",
    ),
    "Found to a create": (
        lambda: Reply(outcome=outcomes.Found(job_ids=("job-x",))),
        "answered the create call with Found",
    ),
    "CancelAcknowledged to a create": (
        lambda: Reply(outcome=outcomes.CancelAcknowledged()),
        "answered the create call with CancelAcknowledged",
    ),
    "CancelledError": (_cancelled, "raised CancelledError during the create call"),
    "SystemExit": (_exit, "raised SystemExit during the create call"),
    "KeyboardInterrupt": (_interrupt, "raised KeyboardInterrupt during the create call"),
}


@pytest.mark.parametrize("what", list(FIRST_CREATE))
async def test_garbage_from_a_code_provider_is_recorded_and_the_worker_goes_on(
    store_kind: str, tmp_path: Path, what: str
) -> None:
    answer, word = FIRST_CREATE[what]

    def handler(call: ScriptedCall) -> Any:
        if call.kind is AttemptKind.CREATE:
            return answer() if call.number == 1 else _accepted(call)
        return _done()

    provider = Raw(handler)
    op, done, attempts, stats = await _drive(provider, store_kind, tmp_path)
    assert done.state is jobtrail.State.SUCCEEDED, (done.state, [a.detail for a in attempts])
    assert stats.finished == 1
    creates = [a for a in attempts if a.kind is AttemptKind.CREATE]
    first = min(creates, key=lambda a: a.started_at or datetime.min.replace(tzinfo=UTC))
    assert first.outcome == "ambiguous"
    assert word in first.detail["error"], first.detail
    # one job: the create after the garbage went out under the same token
    tokens = {c.operation.idempotency_token for c in provider.calls_of(AttemptKind.CREATE)}
    assert tokens == {op.idempotency_token}


async def test_an_accepted_to_a_status_read_is_recorded_and_the_worker_goes_on(
    store_kind: str, tmp_path: Path
) -> None:
    def handler(call: ScriptedCall) -> Any:
        if call.kind is AttemptKind.CREATE or call.number == 1:
            return _accepted(call)  # the create's answer, and then again to the first read
        return _done()

    _, done, attempts, _ = await _drive(Raw(handler), store_kind, tmp_path)
    assert done.state is jobtrail.State.SUCCEEDED
    (odd,) = [a for a in attempts if a.kind is AttemptKind.STATUS and a.outcome == "ambiguous"]
    assert "answered the status call with Accepted" in odd.detail["error"]
