"""The "seen again" fast path's pure parts: `core.draft.seen_again` moves a record exactly as
applying the same unchanged running answer again does, and the worker's memory of answers
(worker/seen.py) keeps only what the core judged unchanged, within its byte budget."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from jobtrail.core import outcomes as o
from jobtrail.core.apply import apply
from jobtrail.core.draft import seen_again
from jobtrail.core.model import AttemptKind, Operation
from jobtrail.core.states import RemoteStatus, State
from jobtrail.providers.protocol import Reply
from jobtrail.worker.seen import SeenAnswers

from factories import T0, make_op, schedule


def _observing(**changes: object) -> Operation:
    return make_op(
        state=State.OBSERVING,
        remote_job_id="job_1",
        remote_state="running",
        remote_status=RemoteStatus.RUNNING,
        progress={"completed": 1, "total": 1},
        poll_count=3,
        updated_at=T0,
        **changes,
    )


def _running(retry_after: str | None = None) -> o.Observed:
    return o.Observed(
        remote_state="running",
        remote_status=RemoteStatus.RUNNING,
        progress={"completed": 1, "total": 1},
        retry_after=retry_after,
        http_status=200,
        request_id="req_1",
    )


@pytest.mark.parametrize(
    "retry_after", [None, "0", "5", "31536000", "Fri, 31 Dec 9999 23:59:59 GMT", "garbage"]
)
@pytest.mark.parametrize("deadline_in", [timedelta(hours=1), timedelta(seconds=3)])
def test_seen_again_moves_the_record_as_judging_the_answer_again_does(
    retry_after: str | None, deadline_in: timedelta
) -> None:
    """The poll counted, the next poll by the same Retry-After or backoff (the same random
    draw), bounded by the deadline: the record `apply` makes of the same answer."""
    now = T0 + timedelta(seconds=30)
    op = _observing(result_deadline=now + deadline_in)
    judged = apply(op, _running(retry_after), now, actor="w1", schedule=schedule(7))
    assert not judged.transitions
    assert seen_again(op, now, retry_after, schedule(7)) == judged.operation


def _reply(outcome: o.CallOutcome | None, answer: bytes | None = b"200\n{}") -> Reply:
    return Reply(outcome=outcome, detail={}, answer=answer)


def test_only_an_answer_judged_unchanged_is_remembered() -> None:
    """An unchanged running read is remembered, for the version its record was left at;
    a terminal answer, an answer that moved the state, or one without an identity is not
    (and makes the last one forgotten)."""
    seen = SeenAnswers()
    op = _observing(version=4)
    after = replace(op, version=5)
    seen.judged(op, AttemptKind.STATUS, _reply(_running("5")), after)
    kept = seen.previous(after, AttemptKind.STATUS)
    assert kept is not None and kept.retry_after == "5" and kept.answer == b"200\n{}"
    assert seen.previous(op, AttemptKind.STATUS) is None  # another version: the record moved
    assert seen.previous(after, AttemptKind.RESULT) is None
    done = replace(_running(), remote_status=RemoteStatus.SUCCEEDED, remote_state="succeeded")
    seen.judged(after, AttemptKind.STATUS, _reply(done), replace(after, version=6))
    assert seen.previous(replace(after, version=6), AttemptKind.STATUS) is None
    seen.judged(op, AttemptKind.STATUS, _reply(_running()), after)
    moved = replace(op, state=State.ACCEPTED)
    seen.judged(moved, AttemptKind.STATUS, _reply(_running()), after)  # accepted -> observing
    assert seen.previous(after, AttemptKind.STATUS) is None
    seen.judged(op, AttemptKind.STATUS, _reply(_running(), answer=None), after)
    assert seen.previous(after, AttemptKind.STATUS) is None


def test_the_oldest_answers_are_forgotten_past_the_byte_budget() -> None:
    """Past its budget the memory forgets the answers read longest ago."""
    seen = SeenAnswers(max_bytes=250)
    ops = [_observing(operation_id=f"op_{n}", version=1) for n in range(4)]
    for op in ops:
        seen.judged(op, AttemptKind.STATUS, _reply(_running(), answer=b"x" * 100), op)
    assert [seen.previous(op, AttemptKind.STATUS) is not None for op in ops] == [
        False,
        False,
        True,
        True,
    ]
