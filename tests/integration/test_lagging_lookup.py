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


def lookup_only_default_window(doc: dict[str, Any]) -> None:
    """Lookup-only, with the listing's visibility window left at its default (5 minutes)
    and a 2-minute create deadline: no miss can prove absence before the deadline."""
    del doc["create"]["idempotency"]
    listing = {k: v for k, v in doc["reconcile"]["list"].items() if k != "visible_within"}
    doc["reconcile"] = {"list": listing}
    doc["deadlines"] = {"create": "2m", "result": "1h", "cancel": "10m"}


async def test_a_job_listed_seconds_late_is_adopted_not_left_to_a_person(
    store_kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The create's answer lost, its job listed 6 to 10 s later, the default 5-minute window
    and a 2-minute create deadline: the lookups go on at the ordinary backoff and adopt the
    job as soon as it is listed (the run is over long before the window would end), one
    job, never needs_human (the adversary's run: 3 of 3 ended needs_human)."""
    async with harness(
        tmp_path,
        kind=store_kind,
        monkeypatch=monkeypatch,
        edit=lookup_only_default_window,
        shared_clock=True,
    ) as rig:
        assert rig.spec.capabilities.absent_after == 300.0
        start = rig.clock.now()
        ops = []
        for n, late in enumerate((6, 8, 10)):
            sim = {"drop_create_answer": True, "list_visible_after": late}
            ops.append(await rig.submit({"account": f"a{n}", "_sim": sim}))
        await rig.run()
        for op in ops:
            op = await rig.op(op)
            jobs = rig.jobs_for(op)
            assert op.state is State.SUCCEEDED, (op.operation_id, op.state)
            assert len(jobs) == 1 and op.remote_job_id == jobs[0].job_id
            path = [t.evidence for t in await rig.history(op)]
            assert Evidence.RECONCILED_FOUND in path
        assert (rig.clock.now() - start).total_seconds() < 120  # virtual: well inside the window
