"""Status answers that cannot be read as a state (DESIGN rule 13: nothing spins), in the pure
core and the pure parser: the parser marks a 2xx answer that states nothing readable, and
the core counts a run of them like refusals, ending in needs_human instead of polling until
the result deadline; a readable answer resets the count; transport failures never count."""

from __future__ import annotations

import random
import tomllib
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from jobtrail.core import outcomes as o
from jobtrail.core.apply import Schedule, apply
from jobtrail.core.evidence import judge
from jobtrail.core.model import Operation
from jobtrail.core.schedule import Refusals
from jobtrail.core.states import Evidence, RemoteStatus, State
from jobtrail.presentation.explain import escalation_bundle, explain_text
from jobtrail.providers.file.config import parse_provider
from jobtrail.providers.http import parse

from factories import T0, make_op

ROOT = Path(__file__).resolve().parents[2]
SPEC = parse_provider(tomllib.loads((ROOT / "providers" / "simulator.toml").read_text()))
SCHEDULE = Schedule(rand=random.Random(5), refusals=Refusals(limit=4))


def observing(**changes: Any) -> Operation:
    fields: dict[str, Any] = {"state": State.OBSERVING, "poll_count": 0} | changes
    return make_op(remote_job_id="job_1", next_poll_at=T0, **fields)


def unreadable(ref: str = "at_9") -> o.Ambiguous:
    return o.Ambiguous(
        reason="the status answer is not JSON", http_status=200, unreadable=True, ref=ref
    )


def running() -> o.Observed:
    return o.Observed(remote_state="running", remote_status=RemoteStatus.RUNNING, ref="at_8")


def run(op: Operation, outcome: o.Outcome, now: datetime) -> Operation:
    return apply(op, outcome, now, actor="w1", schedule=SCHEDULE).operation


# -- the core -----------------------------------------------------------------------------


def test_unreadable_answers_back_off_then_need_a_human() -> None:
    """An unreadable answer to every read: growing waits, then needs_human at the limit,
    named reads_unreadable after the last answer, and nothing left scheduled."""
    op, now, waits = observing(), T0, []
    for _ in range(3):
        op = run(op, unreadable(), now)
        assert op.state is State.OBSERVING and op.next_poll_at is not None
        waits.append((op.next_poll_at - now).total_seconds())
        now = op.next_poll_at
    assert waits == sorted(waits) and waits[-1] > 2 * waits[0]
    applied = apply(op, unreadable("at_12"), now, actor="w1", schedule=SCHEDULE)
    assert applied.operation.state is State.NEEDS_HUMAN
    assert applied.operation.next_poll_at is None and applied.operation.refused_reads == 4
    (moved,) = applied.transitions
    assert moved.evidence is Evidence.READS_UNREADABLE
    assert moved.cause == "status_unreadable:at_12"


def test_an_unreadable_answer_just_after_create_counts_at_once() -> None:
    """No grace for an unreadable answer: the job answered, so it is visible."""
    op = make_op(state=State.ACCEPTED, remote_job_id="job_1", poll_count=0)
    for seconds in range(4):
        op = run(op, unreadable(), T0 + timedelta(seconds=seconds))
    assert op.state is State.NEEDS_HUMAN


def test_a_readable_answer_resets_the_count() -> None:
    """Unreadable answers must come in a row: one readable answer starts the count again."""
    op, now = observing(), T0
    for _ in range(10):
        op = run(op, unreadable(), now)
        op = run(op, unreadable(), now + timedelta(seconds=1))
        op = run(op, unreadable(), now + timedelta(seconds=2))
        assert op.refused_reads == 3
        op = run(op, running(), now + timedelta(seconds=3))
        assert op.state is State.OBSERVING and op.refused_reads == 0
        now += timedelta(seconds=10)


def test_refusals_and_unreadable_answers_share_one_run() -> None:
    """A provider alternating refusals and unreadable answers stops like one doing either."""
    op = observing()
    refused = o.Rejected(reason="status answered HTTP 400", http_status=400, ref="at_3")
    for i, outcome in enumerate([refused, unreadable(), refused]):
        op = run(op, outcome, T0 + timedelta(seconds=i))
    assert op.refused_reads == 3
    applied = apply(op, unreadable("at_4"), T0 + timedelta(seconds=4), actor="w", schedule=SCHEDULE)
    assert applied.operation.state is State.NEEDS_HUMAN
    assert applied.transitions[-1].evidence is Evidence.READS_UNREADABLE


@pytest.mark.parametrize(
    "failure",
    [
        o.Ambiguous(reason="no status answer within 30s"),
        o.Ambiguous(reason="the status call broke off after sending (ClientPayloadError)"),
        o.Ambiguous(reason="status answered HTTP 500", http_status=500),
        o.Ambiguous(reason="the status answer is larger than the limit", http_status=200),
    ],
    ids=["timeout", "cut-short-of-content-length", "5xx", "too-large"],
)
def test_transport_failures_never_count(failure: o.Ambiguous) -> None:
    """Timeouts, broken-off bodies and 5xx stay transient: neither counted nor resetting."""
    op = run(observing(), unreadable(), T0)
    now = T0
    for _ in range(20):
        now += timedelta(seconds=30)
        op = run(op, failure, now)
        assert op.state is State.OBSERVING and op.refused_reads == 1


def test_unreadable_answers_while_cancelling_back_off_until_the_cancel_deadline() -> None:
    """While cancelling, the cancel deadline bounds the wait (cancellation_unconfirmed)."""
    op = observing(
        state=State.CANCELLING, cancel_sent=True, cancel_deadline=T0 + timedelta(hours=1)
    )
    for i in range(8):
        op = run(op, unreadable(), T0 + timedelta(seconds=i))
        assert op.state is State.CANCELLING and op.next_poll_at is not None


# -- the parser reads the answer; the core judges it ----------------------------------------

UNREADABLE_BODIES = {
    "empty": b"",
    "blank": b"  \r\n",
    "no-state": b"{}",
    "other-fields": b'{"job_id": "job_1"}',
    "cut-short": b'{"job_id": "job_1", "state": "runn',
    "not-json": b"<html>Service Unavailable</html>",
    "not-utf8": b"\xff\xfe{",
    "a-list": b"[]",
}


@pytest.mark.parametrize("body", UNREADABLE_BODIES.values(), ids=UNREADABLE_BODIES.keys())
def test_a_2xx_that_states_nothing_is_marked_unreadable(body: bytes) -> None:
    """Each unreadable 200 is read as an observation stating no state, which the core
    judges an Ambiguous outcome marked unreadable, with its reason."""
    read = parse.parse_status(SPEC, 200, {}, body)
    assert isinstance(read, o.Observed) and read.remote_status is RemoteStatus.UNKNOWN
    outcome = judge(read)
    assert isinstance(outcome, o.Ambiguous) and outcome.unreadable
    assert outcome.http_status == 200 and outcome.reason.startswith("the status answer")


@pytest.mark.parametrize("status", [500, 502, 503, 504, 408])
def test_error_codes_are_not_marked_unreadable(status: int) -> None:
    """5xx, 408 stay transient answers whatever their body."""
    outcome = parse.parse_status(SPEC, status, {}, b"")
    assert isinstance(outcome, o.Ambiguous) and not outcome.unreadable


def test_an_unknown_state_word_is_readable() -> None:
    """A state word the file does not map is read (remote status unknown), not a breach."""
    outcome = parse.parse_status(SPEC, 200, {}, b'{"state": "warming_up"}')
    assert isinstance(outcome, o.Observed)
    assert outcome.remote_status is RemoteStatus.UNKNOWN


# -- what people are told -----------------------------------------------------------------


def test_explain_names_the_kind_of_stop() -> None:
    """A run stopped by unreadable answers is explained as such; a live run as either."""
    op = observing()
    for i in range(3):
        op = run(op, unreadable(f"at_{i}"), T0 + timedelta(seconds=i))
    assert "not read:   3 status reads in a row refused or unreadable" in explain_text(
        op, [], [], [], T0
    )
    applied = apply(op, unreadable("at_3"), T0 + timedelta(seconds=9), actor="w", schedule=SCHEDULE)
    stopped, history = applied.operation, list(applied.transitions)
    assert stopped.state is State.NEEDS_HUMAN
    text = explain_text(stopped, history, [], [], T0)
    assert "unreadable: the provider's status answers were unreadable" in text
    assert "refused:" not in text
    summary = escalation_bundle(stopped, history, [], T0)["summary"]
    assert "nothing readable as a state" in summary
