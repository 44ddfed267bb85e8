"""Creates against hostile providers, in the pure core: no answer but the declared lookup
proves that nothing was created once a create may have reached the provider."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from jobtrail.core import outcomes as o
from jobtrail.core.model import AttemptKind, Capabilities, Idempotency, Operation
from jobtrail.core.plan import RETRIES_BEFORE_LOOKUP, Call, Halt, Nothing, Settle, plan
from jobtrail.core.states import TRANSITIONS, Evidence, RemoteStatus, State, check_transition
from jobtrail.errors import ActionRefused, TransitionRefused

from factories import FULL, T0, make_op, step

LOST = o.Ambiguous(reason="no create answer within 2s", ref="at_1")
ALREADY_EXISTS = o.Rejected(reason="create answered HTTP 409", http_status=409, ref="at_2")
UNPROCESSABLE = o.Rejected(reason="create answered HTTP 422", http_status=422, ref="at_2")
GARBLED = o.Ambiguous(reason="create answered 202 but the answer is not JSON", ref="at_2")
RETRY_ONLY = Capabilities(idempotency=Idempotency.HEADER, same_token_retry=True)


def _unknown(caps: Capabilities = FULL) -> Operation:
    return step(make_op(capabilities=caps), LOST).operation


@pytest.mark.parametrize("refusal", [ALREADY_EXISTS, UNPROCESSABLE])
def test_a_refused_retry_asks_the_lookup_instead_of_failing(refusal: o.Rejected) -> None:
    """create_unknown + a 4xx to the same-token retry: reconciliation by lookup, not failed."""
    unknown = _unknown()
    applied = step(unknown, refusal)
    op = applied.operation
    assert op.state is State.RECONCILIATION
    assert applied.transitions[-1].evidence is Evidence.CREATE_UNPROVEN
    assert plan(op, op.next_poll_at or T0) == Call(kind=AttemptKind.RECONCILE)
    found = step(op, o.Found(job_ids=("job_first",), ref="at_3")).operation
    assert found.state is State.ACCEPTED and found.remote_job_id == "job_first"


def test_a_refused_retry_without_a_lookup_needs_a_human() -> None:
    """With no declared lookup, a refused retry stops for a person: the job may exist."""
    unknown = _unknown(RETRY_ONLY)
    applied = step(unknown, ALREADY_EXISTS)
    assert applied.operation.state is State.NEEDS_HUMAN
    assert applied.transitions[-1].evidence is Evidence.CREATE_UNPROVEN
    assert plan(applied.operation, T0) == Nothing(why=Halt.NEEDS_HUMAN)


def test_create_unknown_can_never_become_failed() -> None:
    """The transition table itself has no create_unknown -> failed, whatever the evidence."""
    assert not any(pair == (State.CREATE_UNKNOWN, State.FAILED) for pair in TRANSITIONS)
    for evidence in Evidence:
        with pytest.raises(TransitionRefused):
            check_transition(State.CREATE_UNKNOWN, State.FAILED, evidence)


def test_a_first_create_refused_with_its_answer_still_fails() -> None:
    """A rejection is final for a first create whose answer arrived: nothing was made."""
    applied = step(make_op(), replace(UNPROCESSABLE, ref="at_1"))
    assert applied.operation.state is State.FAILED
    assert applied.transitions[-1].evidence is Evidence.CREATE_REJECTED


def test_a_refusal_after_the_lookup_proved_absence_is_final() -> None:
    """Lookup proved no job exists, the create is sent again and refused: failed, no loop."""
    checking = step(_unknown(), ALREADY_EXISTS).operation
    late = T0 + timedelta(seconds=90)  # past the visibility window (FULL: 60 s)
    pending = step(checking, o.Found(job_ids=(), ref="at_3"), at=late).operation
    assert pending.state is State.CREATE_PENDING
    refused = step(pending, replace(UNPROCESSABLE, ref="at_4")).operation
    assert refused.state is State.FAILED


def test_unreadable_retries_turn_to_the_lookup_after_a_few() -> None:
    """Same-token retries answering garbage: after RETRIES_BEFORE_LOOKUP, look it up."""
    op = _unknown()
    for n in range(RETRIES_BEFORE_LOOKUP):
        action = plan(op, op.next_poll_at or T0)
        assert action == Call(kind=AttemptKind.CREATE, retry=True), n
        op = step(op, replace(GARBLED, ref=f"at_{n + 2}")).operation
        assert op.state is State.CREATE_UNKNOWN
    assert plan(op, op.next_poll_at or T0) == Call(kind=AttemptKind.RECONCILE)


def test_unreadable_retries_without_a_lookup_back_off_until_the_deadline() -> None:
    """No lookup declared: keep retrying with growing waits, then needs_human at the deadline."""
    op = _unknown(RETRY_ONLY)
    waits = []
    for n in range(6):
        due = op.next_poll_at or T0
        assert plan(op, due) == Call(kind=AttemptKind.CREATE, retry=True)
        op = step(op, replace(GARBLED, ref=f"at_{n + 2}"), at=due).operation
        waits.append(((op.next_poll_at or T0) - due).total_seconds())
    assert waits[-1] > waits[0]  # backoff, not a fixed spin
    deadline = o.DeadlinePassed(deadline=o.Deadline.CREATE)
    assert plan(op, op.create_deadline) == Settle(outcome=deadline)
    assert step(op, deadline, at=op.create_deadline).operation.state is State.NEEDS_HUMAN


def _needs_human() -> Operation:
    return step(_unknown(RETRY_ONLY), ALREADY_EXISTS).operation


def test_adopting_an_unseen_job_id_needs_a_status_read_of_it() -> None:
    """A person's word alone cannot adopt a job id the operation never saw."""
    decision = o.HumanDecision(
        decision=o.Decision.ADOPT, actor="alice", reason="found it", job_id="job_found"
    )
    with pytest.raises(ActionRefused, match="not a job id this operation saw"):
        step(_needs_human(), decision)


def test_adopting_an_unseen_job_id_records_its_read_as_evidence() -> None:
    """With a status read of the job, adopt resumes the operation and keeps the read."""
    read = o.Observed(remote_state="running", remote_status=RemoteStatus.RUNNING, ref="at_9")
    decision = o.HumanDecision(
        decision=o.Decision.ADOPT, actor="alice", reason="found it", job_id="job_found", read=read
    )
    applied = step(_needs_human(), decision)
    assert applied.operation.state is State.ACCEPTED
    assert applied.operation.remote_job_id == "job_found"
    assert [(ob.source, ob.ref) for ob in applied.observations] == [("status", "at_9")]
    assert applied.transitions[-1].actor == "alice"


def test_a_409_in_flight_to_a_create_means_it_may_have_been_heard() -> None:
    """409 "in flight" says our token reached the provider: a later refusal proves nothing."""
    in_flight = o.Throttled(reason="create answered HTTP 409", http_status=409, ref="at_1")
    op = step(make_op(), in_flight).operation
    assert op.state is State.CREATE_UNKNOWN
    assert step(op, ALREADY_EXISTS).operation.state is State.RECONCILIATION


def test_a_refusal_after_a_429_is_still_final() -> None:
    """A 429 did nothing at the provider, so the create after it is a first create."""
    throttled = o.Throttled(reason="create answered HTTP 429", http_status=429, ref="at_1")
    op = step(make_op(), throttled).operation
    assert op.state is State.CREATE_PENDING
    assert step(op, UNPROCESSABLE).operation.state is State.FAILED


def test_refused_lookups_back_off_instead_of_spinning() -> None:
    """A lookup refused again and again is asked with growing waits, never every second.
    (The create deadline is far, so no wait is clamped to it.)"""
    op = step(
        replace(_unknown(), create_deadline=T0 + timedelta(hours=1)), ALREADY_EXISTS
    ).operation
    refused = o.Rejected(reason="lookup answered HTTP 400", http_status=400)
    waits = []
    for n in range(6):
        due = op.next_poll_at or T0
        assert plan(op, due) == Call(kind=AttemptKind.RECONCILE)
        op = step(op, replace(refused, ref=f"at_{n + 3}"), at=due).operation
        assert op.state is State.RECONCILIATION
        waits.append(((op.next_poll_at or T0) - due).total_seconds())
    assert min(waits) > 1.2 and waits[-1] == 30.0  # growing to the 30 s cap, not 1 s apart
