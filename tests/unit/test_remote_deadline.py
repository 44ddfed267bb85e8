"""Deadlines pushed to the provider (core/remote_deadline.py) and the watch that follows
(core/plan.py): the value is the result deadline rounded down to what the provider
accepts, never longer; the place is jobtrail's; a job told to stop by itself is watched
until it has, and read once more when jobtrail comes back after that."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from jobtrail.core import outcomes as o
from jobtrail.core.model import AttemptKind, JobRequest
from jobtrail.core.plan import Call, Settle, plan, watched_until
from jobtrail.core.remote_deadline import Form, RemoteDeadline, place, unplaced
from jobtrail.core.states import RemoteStatus, State
from jobtrail.errors import InvalidInput, ProviderConfigError
from jobtrail.providers.file.declared import remote_deadline

from factories import T0, make_op, step

BEDROCK = RemoteDeadline(field="timeoutDurationInHours", unit="h", least=24, most=168)
REPLICATE = RemoteDeadline(header="Cancel-After", unit="s", form=Form.TEXT, least=5)


@pytest.mark.parametrize(
    ("deadline", "given", "value"),
    [
        (BEDROCK, timedelta(hours=72, minutes=59), 72),  # rounded down, never longer
        (BEDROCK, timedelta(days=30), 168),  # the most it accepts
        (BEDROCK, timedelta(hours=23, minutes=59), None),  # shorter than the least: none
        (RemoteDeadline(field="t", unit="m", step=15), timedelta(minutes=44), 30),
        (REPLICATE, timedelta(seconds=4.9), None),
        (REPLICATE, timedelta(minutes=30, seconds=0.7), 1800),
    ],
)
def test_the_value_is_the_longest_accepted_not_longer_than_the_deadline(
    deadline: RemoteDeadline, given: timedelta, value: int | None
) -> None:
    """Whole units, multiples of the step, within the provider's bounds, never above it."""
    assert deadline.value_for(given) == value
    if value is not None:
        assert deadline.seconds(value) <= given.total_seconds()


def test_a_header_is_written_as_text_and_a_field_as_a_number() -> None:
    """Cancel-After: 1800s; timeoutDurationInHours: 72 (nested fields are reached)."""
    headers = place(REPLICATE, {"input": {}}, {"Prefer": "wait"}, timedelta(minutes=30))
    assert headers.headers == {"Prefer": "wait", "Cancel-After": "1800s"}
    assert headers.seconds == 1800
    nested = RemoteDeadline(field="config.timeout_hours", unit="h")
    body = place(nested, {"config": {"x": 1}}, {}, timedelta(hours=5)).body
    assert body == {"config": {"x": 1, "timeout_hours": 5}}


def test_the_place_is_jobtrails() -> None:
    """A body holding another value there is refused; the same value is accepted; a body
    that cannot hold the field is refused; taken out again for a retry-as-new."""
    with pytest.raises(InvalidInput, match="written by jobtrail"):
        place(BEDROCK, {"timeoutDurationInHours": 100}, {}, timedelta(hours=72))
    same = place(BEDROCK, {"timeoutDurationInHours": 72}, {}, timedelta(hours=72))
    assert same.seconds == 72 * 3600
    with pytest.raises(InvalidInput, match="JSON object"):
        place(BEDROCK, ["not", "an", "object"], {}, timedelta(hours=72))
    assert unplaced(BEDROCK, same.body, {}).body == {}
    assert unplaced(REPLICATE, {}, {"cancel-after": "60s", "A": "b"}).headers == {"A": "b"}


def test_the_header_place_is_jobtrails_too() -> None:
    """A header of the deadline's name (in any case) holding another value is refused,
    naming it; the same value is accepted and sent once, under the provider's spelling."""
    with pytest.raises(InvalidInput, match="request header Cancel-After is written by"):
        place(REPLICATE, {}, {"cancel-after": "9999s"}, timedelta(minutes=5))
    same = place(REPLICATE, {}, {"cancel-after": "300s", "A": "b"}, timedelta(minutes=5))
    assert same.headers == {"A": "b", "Cancel-After": "300s"}


def test_nothing_is_written_when_nothing_fits() -> None:
    """A deadline the provider cannot take leaves the request as it was."""
    placed = place(BEDROCK, {"modelId": "m"}, {}, timedelta(hours=6))
    assert placed.body == {"modelId": "m"} and placed.seconds is None


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"header": "A", "field": "b"}, "exactly one of a header or a field"),
        ({"field": "t", "unit": "w"}, "unit is one of"),
        ({"field": "t", "min": 10, "max": 5}, "1 <= min <= max"),
        ({"field": "t", "format": "iso"}, 'format must be "number"'),
        ({"field": "t", "step": "1"}, "whole number of units"),
        ({"field": "t", "every": 1}, "unknown key 'every'"),
    ],
)
def test_a_mistaken_deadline_table_is_refused(table: dict[str, object], message: str) -> None:
    """`[create] deadline` mistakes are clear errors, not a silently dropped promise."""
    with pytest.raises(ProviderConfigError, match=message):
        remote_deadline(table)


def _told(seconds: float) -> object:
    """An observed operation whose create (sent at T0) told the provider to stop after
    `seconds`, with a result deadline of one hour and a cancel timeout of ten minutes."""
    request = JobRequest(method="POST", target="t", body={}, remote_deadline=seconds)
    op = make_op(request=request, state=State.OBSERVING, remote_job_id="j1", create_sent_at=T0)
    return op


def test_the_watch_lasts_until_the_provider_has_stopped_the_job() -> None:
    """Told 90 minutes: watched until 90 minutes after the create plus the cancel timeout;
    without a deadline written, the result deadline alone."""
    op = _told(5400)
    assert watched_until(op) == T0 + timedelta(minutes=100)  # type: ignore[arg-type]
    plain = replace(op, request=replace(op.request, remote_deadline=None))  # type: ignore[type-var]
    assert watched_until(plain) == T0 + timedelta(hours=1)


def test_a_job_not_read_since_it_stopped_is_read_once_more() -> None:
    """jobtrail back after the watch: one status read first (it stopped by itself: how?),
    and only a record changed after the watch ends it at the result deadline."""
    op = replace(_told(1800), updated_at=T0 + timedelta(minutes=5))  # type: ignore[type-var]
    later = T0 + timedelta(hours=5)
    assert plan(op, later) == Call(kind=AttemptKind.STATUS)
    read = replace(op, updated_at=later)
    decided = plan(read, later)
    assert isinstance(decided, Settle) and isinstance(decided.outcome, o.DeadlinePassed)


def test_a_partial_result_read_late_gets_the_cancel_timeout_to_be_collected() -> None:
    """The late read says the job ended cancelled with a partial result: collecting gets
    the cancel timeout from now, not a result deadline already gone."""
    op = replace(_told(1800), updated_at=T0 + timedelta(minutes=5))  # type: ignore[type-var]
    later = T0 + timedelta(hours=5)
    ended = o.Observed(
        remote_state="canceled", remote_status=RemoteStatus.CANCELLED, partial_result=True
    )
    applied = step(op, ended, at=later).operation
    assert applied.state is State.RESULT_COLLECTING
    assert applied.result_deadline == later + timedelta(minutes=10)
    assert plan(applied, later) == Call(kind=AttemptKind.RESULT)
