"""A lookup that sees nothing is not proof while our create may still land (DESIGN rule 13):
a miss proves no job exists only once the provider's visibility window has passed since the
create was last sent, and only for a provider that declares one; until then jobtrail looks
again, and past the create deadline a person decides. Never a resend on a miss."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from jobtrail.core import outcomes as o
from jobtrail.core.model import AttemptKind, Operation
from jobtrail.core.plan import Call, Settle, plan
from jobtrail.core.states import Evidence, State
from jobtrail.providers.file.config import parse_provider

from factories import FULL, T0, make_op, step

LOOKUP_ONLY = replace(FULL, same_token_retry=False, absent_after=60.0)
MISS = o.Found(job_ids=())


def lost(caps: object = LOOKUP_ONLY) -> Operation:
    """A create whose answer was lost at T0 + 1 s: create_unknown, looking it up next."""
    op = make_op(capabilities=caps)
    return step(op, o.Ambiguous(reason="no create answer within 1s", ref="at_1"), at=T0).operation


def test_a_lost_create_records_when_it_may_have_landed() -> None:
    """The outcome of a create call stamps create_sent_at; a lookup's does not."""
    op = lost()
    assert op.state is State.CREATE_UNKNOWN and op.create_sent_at == T0
    looked = step(op, MISS, at=T0 + timedelta(seconds=2)).operation
    assert looked.create_sent_at == T0


def test_a_miss_inside_the_window_proves_nothing_and_looks_again_on_the_backoff() -> None:
    """A miss 2 s after the create: still reconciliation, nothing resent, the next lookup on
    the ordinary backoff (a job listed late is found then), not at the window's end."""
    applied = step(lost(), replace(MISS, ref="at_2"), at=T0 + timedelta(seconds=2))
    op = applied.operation
    assert op.state is State.RECONCILIATION
    assert [t.evidence for t in applied.transitions] == [Evidence.RECONCILE_LOOKUP]
    assert op.next_poll_at is not None and op.next_poll_at < T0 + timedelta(seconds=10)
    assert plan(op, op.next_poll_at) == Call(kind=AttemptKind.RECONCILE)


def test_misses_look_again_at_the_window_s_end_at_the_latest() -> None:
    """However far the backoff has grown, the lookup that can prove absence is made when
    the window ends, not a backoff later."""
    op = lost()
    for seconds in range(2, 60, 5):
        op = step(op, MISS, at=T0 + timedelta(seconds=seconds)).operation
        assert op.state is State.RECONCILIATION
        assert op.next_poll_at is not None and op.next_poll_at <= T0 + timedelta(seconds=60)


def test_a_job_listed_late_is_adopted_long_before_a_long_window_ends() -> None:
    """A 5-minute window, a 2-minute create deadline, the job listed 8 s after the lost
    answer: the lookups go on at the backoff and adopt it, instead of one lookup at the
    deadline (the window's end being past it) and a person asked."""
    op = lost(replace(LOOKUP_ONLY, absent_after=300.0))
    op = step(op, MISS, at=T0 + timedelta(seconds=2)).operation
    while op.state is State.RECONCILIATION:
        assert op.next_poll_at is not None
        at = op.next_poll_at
        action = plan(op, at)
        assert action == Call(kind=AttemptKind.RECONCILE), action
        seen = ("job_7",) if at >= T0 + timedelta(seconds=9) else ()
        op = step(op, o.Found(job_ids=seen, ref="at_n"), at=at).operation
    assert op.state is State.ACCEPTED and op.remote_job_id == "job_7"
    assert op.updated_at is not None and op.updated_at < T0 + timedelta(seconds=60)


def test_the_job_seen_on_a_later_lookup_is_adopted_once() -> None:
    """The job becomes visible: the next lookup finds it, one job, never a second create."""
    op = step(lost(), MISS, at=T0 + timedelta(seconds=2)).operation
    found = step(op, o.Found(job_ids=("job_9",), ref="at_3"), at=T0 + timedelta(seconds=61))
    assert found.operation.state is State.ACCEPTED
    assert found.operation.remote_job_id == "job_9"


def test_a_miss_after_the_window_proves_absence() -> None:
    """The same miss once the window has passed since the create: create again."""
    op = step(lost(), MISS, at=T0 + timedelta(seconds=2)).operation
    late = T0 + timedelta(seconds=61)
    absent = step(op, replace(MISS, ref="at_3"), at=late)
    assert absent.operation.state is State.CREATE_PENDING
    assert absent.transitions[-1].evidence is Evidence.ABSENCE_PROVEN
    assert plan(absent.operation, late) == Call(kind=AttemptKind.CREATE, retry=True)


def test_the_window_counts_from_the_last_create_sent() -> None:
    """A same-token retry sent later moves the window: a miss 61 s after the first create,
    but 11 s after the retry, proves nothing."""
    caps = replace(FULL, absent_after=60.0)
    op = lost(caps)
    retried = step(op, o.Ambiguous(reason="reset", ref="at_2"), at=T0 + timedelta(seconds=50))
    assert retried.operation.create_sent_at == T0 + timedelta(seconds=50)
    miss = step(retried.operation, MISS, at=T0 + timedelta(seconds=61)).operation
    assert miss.state is State.RECONCILIATION


def test_a_provider_without_a_window_never_takes_a_miss_for_proof() -> None:
    """absent_after None: misses keep it looking; the create deadline hands it to a person."""
    op = lost(replace(LOOKUP_ONLY, absent_after=None))
    for seconds in (2, 30, 100):
        op = step(op, MISS, at=T0 + timedelta(seconds=seconds)).operation
        assert op.state is State.RECONCILIATION
    late = op.create_deadline
    action = plan(op, late)
    assert action == Settle(outcome=o.DeadlinePassed(deadline=o.Deadline.CREATE))
    assert step(op, action.outcome, at=late).operation.state is State.NEEDS_HUMAN


def test_a_window_longer_than_the_create_deadline_ends_with_a_person() -> None:
    """A 5-minute window and a 2-minute create deadline: no miss can prove absence in time,
    so the operation stops in needs_human rather than resend."""
    op = lost(replace(LOOKUP_ONLY, absent_after=300.0))
    op = step(op, MISS, at=T0 + timedelta(seconds=5)).operation
    assert op.next_poll_at is not None and op.next_poll_at <= op.create_deadline
    action = plan(op, op.create_deadline)
    assert isinstance(action, Settle)
    assert step(op, action.outcome, at=op.create_deadline).operation.state is State.NEEDS_HUMAN


@pytest.mark.parametrize(
    ("declared", "seconds"),
    [(None, 300.0), ("60s", 60.0), ("never", None), ("0s", 0.0)],
)
def test_the_provider_file_declares_the_window(declared: str | None, seconds: float | None) -> None:
    """`[reconcile] list.visible_within`: a duration, "never", or 5 minutes by default."""
    listing: dict[str, str] = {"path": "/jobs?ref={operation_id}", "job_id": "id"}
    if declared is not None:
        listing["visible_within"] = declared
    doc = {
        "name": "p",
        "base_url": "https://p.example",
        "create": {"path": "/jobs", "client_reference": {"field": "ref"}},
        "status": {"path": "/jobs/{job_id}"},
        "reconcile": {"list": listing},
    }
    assert parse_provider(doc).capabilities.absent_after == seconds


def test_an_answer_that_rules_our_job_out_is_proof_at_once() -> None:
    """A lookup whose answer rules a job of ours out (our name held by another job's input)
    is not a miss in a lagging listing: absence is proven without waiting for the window."""
    ruled = o.Found(job_ids=(), ruled_out="the name is held by another execution", ref="at_2")
    absent = step(lost(), ruled, at=T0 + timedelta(seconds=2))
    assert absent.operation.state is State.CREATE_PENDING
    assert absent.transitions[-1].evidence is Evidence.ABSENCE_PROVEN


def test_a_miss_read_before_the_window_ended_proves_nothing_when_recorded_after() -> None:
    """The listing was asked for 1 s before the window's end and its answer recorded 5 s
    after: it shows the listing as it was when read, so it proves nothing (the SPIN model's
    JUDGED_AT_ANSWER counterexample: a second job), and the next lookup is made."""
    op = step(lost(), MISS, at=T0 + timedelta(seconds=2)).operation
    late = replace(MISS, ref="at_4", asked_at=T0 + timedelta(seconds=59))
    applied = step(op, late, at=T0 + timedelta(seconds=65))
    assert applied.operation.state is State.RECONCILIATION
    assert Evidence.ABSENCE_PROVEN not in [t.evidence for t in applied.transitions]
    after = replace(MISS, ref="at_5", asked_at=T0 + timedelta(seconds=61))
    proven = step(applied.operation, after, at=T0 + timedelta(seconds=66)).operation
    assert proven.state is State.CREATE_PENDING
