"""Schedules a provider cannot break (DESIGN rule 13), in the pure core: hints are parsed
safely, every wait lies between the [poll] floor and ceiling and never past the deadline in
force, and refused status reads back off and end in needs_human instead of spinning."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobtrail.core import outcomes as o
from jobtrail.core.apply import Schedule, apply
from jobtrail.core.model import CancelIntent, Operation
from jobtrail.core.plan import Settle, plan
from jobtrail.core.schedule import (
    MAX_RETRY_AFTER,
    POLL_DEFAULTS,
    Backoff,
    Bounds,
    Refusals,
    parse_retry_after,
)
from jobtrail.core.states import Evidence, RemoteStatus, State
from jobtrail.errors import ProviderConfigError
from jobtrail.providers.file.config import parse_provider, poll_rules
from jobtrail.providers.file.spec import PollRules

from factories import T0, make_op

NOW = datetime(2025, 3, 8, 14, 0, 0, tzinfo=UTC)
FAR = [
    "9" * 5000,
    "86400000",
    "Fri, 31 Dec 9999 23:59:59 GMT",
    "Fri, 31 Dec 9999 23:59:59 -2359",
]
HOSTILE = [*FAR, "0", "-5", "-99999999999", "1.5", "1e9", "soon", "", " ", "٣", "x" * 10_000]


def observing(**changes: Any) -> Operation:
    fields: dict[str, Any] = {"state": State.OBSERVING, "poll_count": 3} | changes
    return make_op(remote_job_id="job_1", next_poll_at=T0, **fields)


def running(retry_after: str | None = None) -> o.Observed:
    return o.Observed(
        remote_state="running",
        remote_status=RemoteStatus.RUNNING,
        retry_after=retry_after,
        ref="at_9",
    )


def refused(status: int) -> o.Rejected:
    return o.Rejected(reason=f"status answered HTTP {status}", http_status=status, ref="at_9")


def run(
    op: Operation, outcome: o.Outcome, now: datetime, policy: Schedule | None = None
) -> Operation:
    applied = apply(
        op, outcome, now, actor="w1", schedule=policy or Schedule(rand=random.Random(1))
    )
    return applied.operation


# -- Retry-After is parsed safely ----------------------------------------------------------


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_retry_after_values_parse_without_raising(value: str) -> None:
    """Huge numbers, year-9999 dates, negatives and garbage give a storable time or nothing."""
    parsed = parse_retry_after(value, NOW)
    if parsed is not None:
        assert NOW <= parsed <= NOW + timedelta(seconds=MAX_RETRY_AFTER)
        assert parsed.astimezone(UTC) == parsed  # convertible, so the store can write it


@pytest.mark.parametrize("value", FAR)
def test_far_retry_after_values_are_capped(value: str) -> None:
    """A hint of years means MAX_RETRY_AFTER, not an overflow."""
    assert parse_retry_after(value, NOW) == NOW + timedelta(seconds=MAX_RETRY_AFTER)


def test_negative_and_fractional_retry_after_are_ignored() -> None:
    """Not delay-seconds and not an HTTP-date: ignored, so backoff applies."""
    assert parse_retry_after("-5", NOW) is None
    assert parse_retry_after("1.5", NOW) is None


@given(st.one_of(st.text(max_size=80), st.integers().map(str), st.integers(0, 10**6).map(str)))
def test_any_retry_after_value_parses_into_range(value: str) -> None:
    """Whatever the header says, the parsed time lies in [now, now + MAX_RETRY_AFTER]."""
    parsed = parse_retry_after(value, NOW)
    assert parsed is None or NOW <= parsed <= NOW + timedelta(seconds=MAX_RETRY_AFTER)


# -- the deadline in force bounds every wait -----------------------------------------------


@pytest.mark.parametrize("value", FAR)
def test_far_hint_while_observing_wakes_at_the_result_deadline(value: str) -> None:
    """The next poll is at the result deadline, where the plan times the operation out."""
    op = observing(result_deadline=T0 + timedelta(seconds=30))
    after = run(op, running(value), T0)
    assert after.next_poll_at == op.result_deadline
    action = plan(after, after.next_poll_at)
    assert action == Settle(outcome=o.DeadlinePassed(deadline=o.Deadline.RESULT))
    timed_out = run(after, action.outcome, after.next_poll_at)
    assert timed_out.state is State.RESULT_TIMED_OUT and timed_out.next_poll_at is None


def test_far_hint_while_cancelling_wakes_at_the_cancel_deadline() -> None:
    """While cancelling, the cancel deadline bounds the wait (cancellation_unconfirmed)."""
    intent = CancelIntent(
        actor="alice", reason="stop", expected_effect="-", requested_at=T0, request_id="r"
    )
    op = observing(
        state=State.CANCELLING,
        cancel_intent=intent,
        cancel_sent=True,
        cancel_deadline=T0 + timedelta(seconds=20),
    )
    after = run(op, running("Fri, 31 Dec 9999 23:59:59 GMT"), T0)
    assert after.next_poll_at == op.cancel_deadline
    action = plan(after, after.next_poll_at)
    assert isinstance(action, Settle)
    assert run(after, action.outcome, after.next_poll_at).state is State.CANCELLATION_UNCONFIRMED


def test_far_hint_on_a_throttled_create_wakes_at_the_create_deadline() -> None:
    """A 429 with a far Retry-After on create waits no longer than the create deadline."""
    op = make_op(create_deadline=T0 + timedelta(seconds=45))
    throttled = o.Throttled(reason="429", retry_after="9" * 5000, http_status=429, ref="at_1")
    after = run(op, throttled, T0)
    assert after.next_poll_at == op.create_deadline


def test_far_hint_is_capped_by_the_poll_max_before_a_far_deadline() -> None:
    """With a deadline days away, a hint of a year still waits at most [poll] max."""
    op = observing(result_deadline=T0 + timedelta(days=7))
    policy = Schedule(rand=random.Random(1), bounds=Bounds(floor=1, ceiling=600))
    after = run(op, running("86400000"), T0, policy)
    assert after.next_poll_at == T0 + timedelta(seconds=600)


# -- the floor ------------------------------------------------------------------------------


def test_retry_after_zero_waits_the_floor() -> None:
    """`Retry-After: 0` schedules the next poll no sooner than [poll] min (default 1 s)."""
    after = run(observing(), running("0"), T0)
    assert after.next_poll_at == T0 + timedelta(seconds=1)


@given(
    hint=st.one_of(st.none(), st.sampled_from(HOSTILE), st.integers(-5, 10**7).map(str)),
    polls=st.integers(0, 60),
    floor=st.floats(0.001, 30),
    ceiling=st.floats(30, 7200),
)
def test_every_scheduled_poll_lies_between_floor_ceiling_and_deadline(
    hint: str | None, polls: int, floor: float, ceiling: float
) -> None:
    """For any hint and poll count, floor <= wait <= ceiling, and never past the deadline."""
    op = observing(poll_count=polls, result_deadline=T0 + timedelta(hours=2))
    policy = Schedule(rand=random.Random(polls), bounds=Bounds(floor=floor, ceiling=ceiling))
    after = run(op, running(hint), T0, policy)
    assert after.next_poll_at is not None
    wait = (after.next_poll_at - T0).total_seconds()
    assert floor - 1e-6 <= wait <= ceiling + 1e-6
    assert after.next_poll_at <= op.result_deadline


def test_a_deadline_nearer_than_the_floor_wins() -> None:
    """At the deadline nothing is called, so a deadline sooner than the floor is kept."""
    op = observing(result_deadline=T0 + timedelta(milliseconds=200))
    assert run(op, running("0"), T0).next_poll_at == op.result_deadline


# -- refused status reads ---------------------------------------------------------------


def test_refused_reads_back_off_exponentially_then_need_a_human() -> None:
    """400 on every status read: growing waits, then needs_human after max_refused_reads."""
    policy = Schedule(rand=random.Random(3), refusals=Refusals(limit=4))
    op, now, waits = observing(poll_count=0), T0, []
    for _ in range(3):
        op = run(op, refused(400), now, policy)
        assert op.state is State.OBSERVING and op.next_poll_at is not None
        waits.append((op.next_poll_at - now).total_seconds())
        now = op.next_poll_at
    assert waits == sorted(waits) and waits[-1] > 2 * waits[0]
    applied = apply(op, refused(400), now, actor="w1", schedule=policy)
    assert applied.operation.state is State.NEEDS_HUMAN
    assert applied.operation.next_poll_at is None and applied.operation.refused_reads == 4
    (moved,) = applied.transitions
    assert moved.evidence is Evidence.READS_REFUSED and moved.cause == "status_refused:at_9"
    assert plan(applied.operation, now).describe() == "waiting for a recorded human decision"


def test_a_404_right_after_create_is_forgiven_within_the_grace_window() -> None:
    """While no read has succeeded, 404s inside not_found_grace do not count; after it they do."""
    policy = Schedule(rand=random.Random(3), refusals=Refusals(not_found_grace=30, limit=2))
    op = make_op(state=State.ACCEPTED, remote_job_id="job_1", poll_count=0)
    for seconds in (0, 10, 29):
        op = run(op, refused(404), T0 + timedelta(seconds=seconds), policy)
        assert op.state is State.ACCEPTED and op.refused_reads == 0
    op = run(op, refused(404), T0 + timedelta(seconds=31), policy)
    assert op.refused_reads == 1
    assert run(op, refused(404), T0 + timedelta(seconds=40), policy).state is State.NEEDS_HUMAN


def test_a_404_after_a_successful_read_counts_at_once() -> None:
    """Once the job was seen, a 404 is a refusal like any other 4xx."""
    policy = Schedule(rand=random.Random(3), refusals=Refusals(limit=1))
    assert run(observing(), refused(404), T0, policy).state is State.NEEDS_HUMAN


def test_a_readable_status_answer_resets_the_refusal_count() -> None:
    """Refusals must come in a row: an observation in between starts the count again."""
    policy = Schedule(rand=random.Random(3), refusals=Refusals(limit=2))
    op = run(observing(), refused(403), T0, policy)
    assert op.refused_reads == 1 and op.refused_since == T0
    op = run(op, running(), T0 + timedelta(seconds=5), policy)
    assert op.refused_reads == 0 and op.refused_since is None
    assert run(op, refused(403), T0 + timedelta(seconds=9), policy).state is State.OBSERVING


def test_server_errors_back_off_and_never_need_a_human() -> None:
    """5xx answers grow the wait up to the cap and keep going until the deadline."""
    op, now, waits = observing(poll_count=0), T0, []
    for _ in range(12):
        op = run(op, o.Ambiguous(reason="500", http_status=500, ref="at_9"), now)
        assert op.state is State.OBSERVING and op.next_poll_at is not None
        waits.append((op.next_poll_at - now).total_seconds())
        now = op.next_poll_at
    assert waits[3] > 2 * waits[0] and max(waits) <= 60


def test_a_refused_read_while_cancelling_backs_off_instead_of_spinning() -> None:
    """After an ambiguous cancel, a refused status read waits; it never re-polls at once."""
    intent = CancelIntent(
        actor="alice", reason="stop", expected_effect="-", requested_at=T0, request_id="r"
    )
    op = observing(
        state=State.CANCEL_REQUESTED,
        cancel_intent=intent,
        cancel_sent=True,
        cancel_deadline=T0 + timedelta(minutes=10),
    )
    after = run(op, refused(404), T0)
    assert after.state is State.CANCEL_REQUESTED and after.next_poll_at is not None
    assert after.next_poll_at >= T0 + timedelta(seconds=1)


def test_refused_lookups_during_reconciliation_back_off() -> None:
    """A lookup by client reference answered 400 again and again waits longer each time."""
    op = make_op(state=State.RECONCILIATION, create_attempts=2, poll_count=0)
    now, waits = T0, []
    for _ in range(3):
        op = run(op, o.Rejected(reason="400", http_status=400, ref="at_9"), now)
        assert op.state is State.RECONCILIATION and op.next_poll_at is not None
        waits.append((op.next_poll_at - now).total_seconds())
        now = op.next_poll_at
    assert waits == sorted(waits) and waits[-1] > 2 * waits[0]


def test_an_adopt_decision_starts_the_refusal_count_again() -> None:
    """A person resolving needs_human by adopting the job resumes polling from zero."""
    stopped = make_op(
        state=State.NEEDS_HUMAN, remote_job_id="job_1", refused_reads=5, refused_since=T0
    )
    decision = o.HumanDecision(
        decision=o.Decision.ADOPT, actor="alice", reason="job is fine", job_id="job_1"
    )
    after = run(stopped, decision, T0)
    assert after.state is State.ACCEPTED and after.refused_reads == 0
    assert after.refused_since is None


# -- the [poll] table ---------------------------------------------------------------------


def test_poll_table_defaults() -> None:
    """Without keys: floor 1 s, ceiling 1 h, 404 grace 30 s, needs_human after 5 refusals."""
    rules = poll_rules({})
    assert (rules.bounds.floor, rules.bounds.ceiling) == (1.0, 3600.0)
    assert (rules.refusals.not_found_grace, rules.refusals.limit) == (30.0, 5)


def test_an_empty_poll_table_is_the_cores_defaults() -> None:
    """The file parser and the core read one set of defaults: POLL_DEFAULTS."""
    assert poll_rules({}) == PollRules()
    assert PollRules().backoff == Backoff(base=POLL_DEFAULTS.initial, cap=POLL_DEFAULTS.cap)
    assert poll_rules({"min": "1ms"}).bounds.floor == POLL_DEFAULTS.lowest_min


def test_poll_table_keys_are_read() -> None:
    """min, max, not_found_grace and max_refused_reads set the schedule's rules."""
    rules = poll_rules({"min": "2s", "max": "10m", "not_found_grace": "1m", "max_refused_reads": 3})
    assert (rules.bounds.floor, rules.bounds.ceiling) == (2.0, 600.0)
    assert (rules.refusals.not_found_grace, rules.refusals.limit) == (60.0, 3)


def test_a_faster_initial_lowers_the_default_floor() -> None:
    """A file that polls every 100 ms on purpose keeps doing so; Retry-After: 0 still waits."""
    assert poll_rules({"initial": "100ms", "cap": "1s"}).bounds.floor == pytest.approx(0.1)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"min": "0s"}, "at least"),
        ({"min": "2m", "cap": "1m"}, "min <= cap <= max"),
        ({"cap": "2h", "max": "1h"}, "min <= cap <= max"),
        ({"max_refused_reads": 0}, "max_refused_reads"),
        ({"max_refused_reads": "5"}, "max_refused_reads"),
        ({"not_found_grace": "soon"}, "duration"),
    ],
)
def test_poll_table_mistakes_are_refused(table: dict[str, Any], message: str) -> None:
    """A floor of zero (which would let Retry-After: 0 spin) and contradictions are refused."""
    doc = {
        "name": "p",
        "base_url": "http://127.0.0.1:1",
        "create": {"path": "/jobs"},
        "status": {"path": "/jobs/{job_id}"},
        "poll": table,
    }
    with pytest.raises(ProviderConfigError, match=message):
        parse_provider(doc)


def test_an_unknown_poll_key_is_still_refused() -> None:
    """A typo in [poll] (say `mni`) is refused, never silently dropped."""
    doc = {
        "name": "p",
        "base_url": "http://127.0.0.1:1",
        "create": {"path": "/jobs"},
        "status": {"path": "/jobs/{job_id}"},
        "poll": {"mni": "1s"},
    }
    with pytest.raises(ProviderConfigError, match="unknown key 'mni'"):
        parse_provider(doc)
