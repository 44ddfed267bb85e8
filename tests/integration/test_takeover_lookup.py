"""A worker that dies mid-create is taken over only when the call's lease ends (twice the
call timeout at least, whatever `--lease` says), which may be past a short create deadline:
the create that was sent is then looked up once, and the job it made adopted, before the
operation stops for a person (Ray Jobs, a real server: 61 s with a 30 s timeout and a
1-minute create deadline ended needs_human without a single lookup). On SQLite and
PostgreSQL, over loopback, on a virtual clock."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from jobtrail.core.model import AttemptKind
from jobtrail.core.states import Evidence, State
from jobtrail.providers.guarded import guarded_call
from jobtrail.store.machine_clock import machine_now

from harness import Harness, harness
from waits import until_true

DEAD = "dead-worker"


def short_create_deadline(doc: dict[str, Any]) -> None:
    doc["deadlines"] = {"create": "1m", "result": "1h", "cancel": "10m"}


async def _dies_after_sending(rig: Harness, body: dict[str, Any]) -> str:
    """A worker claims a fresh operation, records the create's intent, sends it (the
    provider makes the job), and dies before recording the answer: its lease lapses (a
    short one, on the machine's clock) and the intent stays in flight."""
    op = await rig.submit(body)
    (claim,) = await rig.rt.ledger.claim(DEAD, 1, timedelta(seconds=0.2))
    op = claim.operation
    provider = rig.rt.providers.for_operation(op)
    request = provider.describe(AttemptKind.CREATE, op)
    op, _ = await rig.rt.ledger.begin_call(op, AttemptKind.CREATE, request, DEAD)
    ended = machine_now()[1] + 0.3
    reply = await guarded_call(provider, rig.rt.ledger.redactor(op), AttemptKind.CREATE, op)
    assert reply.outcome is not None and reply.outcome.word == "accepted"
    until_true(lambda: machine_now()[1] > ended, 5, "the dead worker's lease lapsed")
    return op.operation_id


@pytest.mark.parametrize("same_token", [True, False], ids=["token", "lookup-only"])
async def test_a_create_cut_by_a_dead_worker_is_looked_up_past_its_deadline(
    store_kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, same_token: bool
) -> None:
    """The takeover comes 61 s after the create (the call's lease), past the 1-minute create
    deadline: one lookup (never a resend) finds the job, which is adopted and collected."""

    def edit(doc: dict[str, Any]) -> None:
        short_create_deadline(doc)
        if not same_token:
            del doc["create"]["idempotency"]
            doc["reconcile"].pop("same_token")

    async with harness(
        tmp_path, kind=store_kind, monkeypatch=monkeypatch, edit=edit, shared_clock=True
    ) as rig:
        op_id = await _dies_after_sending(rig, {"account": "a"})
        rig.clock.advance(61)  # the effect lease's end: twice a 30 s timeout, and a second
        await rig.run()
        op = await rig.op(op_id)
        assert op.state is State.SUCCEEDED, [t.evidence for t in await rig.history(op)]
        assert len(rig.jobs_for(op)) == 1 and op.remote_job_id == rig.jobs_for(op)[0].job_id
        attempts = await rig.rt.ledger.store.attempts(op_id)
        assert [a.kind for a in attempts].count(AttemptKind.CREATE) == 1
        assert AttemptKind.RECONCILE in [a.kind for a in attempts]
        assert Evidence.RECONCILED_FOUND in [t.evidence for t in await rig.history(op)]


async def test_a_lookup_that_finds_nothing_past_the_deadline_asks_a_person(
    store_kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one lookup owed finds no job (its listing lags by an hour; a miss proves nothing
    within the window): the operation stops for a person, and nothing is sent again."""

    def edit(doc: dict[str, Any]) -> None:
        short_create_deadline(doc)
        doc["reconcile"]["list"]["visible_within"] = "never"

    async with harness(
        tmp_path, kind=store_kind, monkeypatch=monkeypatch, edit=edit, shared_clock=True
    ) as rig:
        op_id = await _dies_after_sending(
            rig, {"account": "a", "_sim": {"list_visible_after": 3600}}
        )
        rig.clock.advance(61)
        await rig.run()
        op = await rig.op(op_id)
        assert op.state is State.NEEDS_HUMAN
        assert (await rig.history(op))[-1].evidence is Evidence.CREATE_DEADLINE_PASSED
        attempts = await rig.rt.ledger.store.attempts(op_id)
        kinds = [a.kind for a in attempts]
        assert kinds.count(AttemptKind.CREATE) == 1 and kinds.count(AttemptKind.RECONCILE) == 1
