"""A provider whose new job shows in its listing late (its create still in flight, or a
listing that lags its writes), over loopback on a SQLite ledger: a lookup that sees
nothing while our create may still land is not proof, so a lookup-only provider never gets
a job twice (the adversary's run: 5 operations made 10 jobs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jobtrail.core.model import AttemptKind
from jobtrail.core.states import Evidence, State

from harness import harness

# What a provider says and how it is scheduled: the same on every store (SQLite only).
pytestmark = pytest.mark.sqlite_only


def lookup_only(window: str) -> Any:
    """The simulator's file with no idempotency key and no same-token retry: after a lost
    create answer, only its listing by client reference can say whether a job exists."""

    def edit(doc: dict[str, Any]) -> None:
        del doc["create"]["idempotency"]
        listing = dict(doc["reconcile"]["list"], visible_within=window)
        doc["reconcile"] = {"list": listing}

    return edit


async def test_five_lost_answers_behind_a_lagging_listing_make_five_jobs(
    store_kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every create answer lost, every job listed 35 s after its create: each operation
    looks again until the job shows, and ends with the one job it made."""
    async with harness(
        tmp_path,
        kind=store_kind,
        monkeypatch=monkeypatch,
        edit=lookup_only("60s"),
        shared_clock=True,
    ) as rig:
        sim = {"drop_create_answer": True, "list_visible_after": 35}
        ops = [await rig.submit({"account": f"a{n}", "_sim": sim}) for n in range(5)]
        await rig.run()
        for op in ops:
            op = await rig.op(op)
            jobs = rig.jobs_for(op)
            assert len(jobs) == 1, f"{op.operation_id} made {len(jobs)} jobs"
            assert op.state is State.SUCCEEDED and op.remote_job_id == jobs[0].job_id
            attempts = await rig.rt.ledger.store.attempts(op.operation_id)
            assert sum(1 for a in attempts if a.kind is AttemptKind.CREATE) == 1
            assert len(rig.calls(op, "list")) >= 2  # the first lookup missed it
        assert len(rig.sim.jobs) == 5


async def test_a_job_listed_later_than_the_window_is_a_person_s_question_not_a_resend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With "never" declared, a miss proves nothing ever: a job that never shows (listed
    an hour after its create) leaves the operation to a person at the create deadline, and
    the create is sent once."""
    async with harness(
        tmp_path, monkeypatch=monkeypatch, edit=lookup_only("never"), shared_clock=True
    ) as rig:
        sim = {"drop_create_answer": True, "list_visible_after": 3600}
        op = await rig.submit({"account": "a", "_sim": sim})
        await rig.run()
        op = await rig.op(op)
        assert op.state is State.NEEDS_HUMAN
        assert (await rig.history(op))[-1].evidence is Evidence.CREATE_DEADLINE_PASSED
        assert len(rig.jobs_for(op)) == 1
        attempts = await rig.rt.ledger.store.attempts(op.operation_id)
        assert sum(1 for a in attempts if a.kind is AttemptKind.CREATE) == 1
