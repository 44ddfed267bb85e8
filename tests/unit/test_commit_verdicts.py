"""The commit verdict rules both stores apply to a refused change (store/changes.py)."""

from __future__ import annotations

from jobtrail.core.model import Attempt, AttemptKind
from jobtrail.store.changes import Change, Verdict, audited, kept_when_refused, refusal

from factories import T0, make_op

NOW = make_op(fence=4)


def _attempt(kind: AttemptKind) -> Attempt:
    return Attempt(
        attempt_id="at_1",
        operation_id=NOW.operation_id,
        kind=kind,
        fence=3,
        actor="w1",
        started_at=T0,
        request={},
        finished_at=T0,
        outcome="accepted",
    )


def test_an_owner_whose_fence_moved_on_is_fenced_out() -> None:
    """Fence 3 against a record at fence 4: the lease was taken over."""
    assert refusal(Change(operation=NOW, owner_fence=3), NOW) is Verdict.FENCED_OUT


def test_anything_else_refused_is_stale() -> None:
    """Same fence (the version moved), no fence (not an owner), or no record: stale."""
    assert refusal(Change(operation=NOW, owner_fence=4), NOW) is Verdict.STALE
    assert refusal(Change(operation=NOW), NOW) is Verdict.STALE
    assert refusal(Change(operation=NOW, owner_fence=3), None) is Verdict.STALE


def test_a_fenced_out_call_keeps_its_outcome_and_audit() -> None:
    """The call was made: its finished attempt and its outcome's entry are facts regardless;
    the rest it carries (its transitions) was not applied and is not audited."""
    call = Change(operation=NOW, owner_fence=3, attempt_finished=_attempt(AttemptKind.CREATE))
    assert kept_when_refused(call, Verdict.FENCED_OUT) == call.attempt_finished
    assert audited(call, Verdict.FENCED_OUT, "attempt.outcome")
    assert not audited(call, Verdict.FENCED_OUT, "transition")
    assert audited(call, Verdict.OK, "attempt.outcome") and audited(call, Verdict.OK, "transition")
    intent = Change(operation=NOW, owner_fence=3, attempt_started=_attempt(AttemptKind.CREATE))
    assert not audited(intent, Verdict.FENCED_OUT, "attempt.intent")


def test_a_stale_change_or_fenced_out_read_records_nothing() -> None:
    """A stale writer applies its outcome again; a fenced-out safe read had no effect."""
    call = Change(operation=NOW, owner_fence=4, attempt_finished=_attempt(AttemptKind.CREATE))
    assert kept_when_refused(call, Verdict.STALE) is None
    assert not audited(call, Verdict.STALE, "attempt.outcome")
    read = Change(operation=NOW, owner_fence=3, safe_read=_attempt(AttemptKind.STATUS))
    assert kept_when_refused(read, Verdict.FENCED_OUT) is None
    assert not audited(read, Verdict.FENCED_OUT, "attempt.outcome")
