"""The sentences every surface prints about order and cause say only what the record holds
(issue 31): the pure wording functions of the core and the presentation, on records built
by hand."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

from jobtrail.core.failure import failure_reason
from jobtrail.core.model import (
    Attempt,
    AttemptKind,
    CancelIntent,
    Capabilities,
    Observation,
    Transition,
)
from jobtrail.core.nextstep import attention_reason, halted, next_step, remote_may_run
from jobtrail.core.order import cancel_order, provider_time
from jobtrail.core.proof import lookup_name
from jobtrail.core.states import Evidence, RemoteStatus, State
from jobtrail.core.validate import Candidate, Rules, validate
from jobtrail.core.words import cut_middle
from jobtrail.presentation.facts import reconciled_text
from jobtrail.presentation.views import found_text

from factories import FULL, T0, make_op

S, E = State, Evidence


def _step(
    n: int,
    frm: State,
    to: State,
    evidence: Evidence,
    actor: str = "worker-1",
    remote_job_id: str | None = None,
) -> Transition:
    return Transition(
        operation_id="op_01J7Q5X4D4PA3D",
        at=T0 + timedelta(minutes=n),
        actor=actor,
        from_state=frm,
        to_state=to,
        evidence=evidence,
        cause=f"step:{n}",
        remote_job_id=remote_job_id,
        seq=n,
    )


# -- a long schema error keeps its reason -----------------------------------------------------


def test_a_long_schema_error_keeps_its_reason_and_a_long_path_its_ends() -> None:
    """A value thousands of characters long that has the wrong type: the problem still says
    what is wrong with it ("is not of type 'integer'"), the middle of the value cut out."""
    rules = Rules(schema={"type": "object", "properties": {"n": {"type": "integer"}}})
    document = json.dumps({"n": "x" * 5000}).encode()
    summary = validate(Candidate(content=document, content_type="application/json"), rules, None)
    (problem,) = summary.problems
    assert problem.startswith("schema: at n: 'xxx") and len(problem) < 400, problem
    assert problem.endswith("is not of type 'integer'"), problem
    deep = {"type": "array", "items": {"type": "object", "additionalProperties": {"$ref": "#"}}}
    nested: object = [1]
    for i in range(80):
        nested = [{f"key_{i:02d}": nested}]
    shown = validate(
        Candidate(content=json.dumps(nested).encode(), content_type="application/json"),
        Rules(schema=deep),
        None,
    ).problems[0]
    assert "characters cut" in shown and shown.endswith("is not of type 'object'"), shown


def test_cut_middle_keeps_both_ends_and_counts_the_cut() -> None:
    """Short texts are whole; long ones keep a third of the limit from the start, two thirds
    from the end, and say how much is gone."""
    assert cut_middle("short", 10) == "short"
    cut = cut_middle("a" * 50 + "REASON", 30)
    assert cut.startswith("a" * 10) and cut.endswith("REASON") and "[26 characters cut]" in cut


# -- a lost create answer resolved by a person ------------------------------------------------


def test_a_lost_create_answer_resolved_by_a_person_says_who_resolved_it() -> None:
    """Until a person decides, "not resolved: ...; a person decides"; once one adopted a job,
    resolved by that person, named with the job and the time, whatever happened after."""
    stopped = [
        _step(1, S.CREATE_PENDING, S.CREATE_UNKNOWN, E.CREATE_AMBIGUOUS),
        _step(2, S.CREATE_UNKNOWN, S.NEEDS_HUMAN, E.NO_RECONCILIATION),
    ]
    waiting = reconciled_text(make_op(state=S.NEEDS_HUMAN), stopped)
    assert waiting is not None and "not resolved" in waiting and "a person decides" in waiting
    adopted = [
        *stopped,
        _step(3, S.NEEDS_HUMAN, S.ACCEPTED, E.HUMAN_DECISION, actor="alice", remote_job_id="j1"),
        _step(4, S.ACCEPTED, S.RESULT_COLLECTING, E.OBSERVED_SUCCEEDED, remote_job_id="j1"),
        _step(5, S.RESULT_COLLECTING, S.SUCCEEDED, E.RESULT_VALIDATED, remote_job_id="j1"),
    ]
    done = reconciled_text(make_op(state=S.SUCCEEDED), adopted)
    assert done is not None and "not resolved" not in done, done
    assert "resolved by a person: alice adopted job j1 at 2025-03-08T14:25:11Z" in done, done
    failed = [*stopped, _step(3, S.NEEDS_HUMAN, S.FAILED, E.HUMAN_DECISION, actor="bob")]
    ended = reconciled_text(make_op(state=S.FAILED), failed)
    assert ended is not None and "bob ended it failed" in ended, ended


# -- a job seen ended never "may still run" ---------------------------------------------------


def test_a_job_seen_ended_is_never_said_to_be_running() -> None:
    """result_timed_out whose record holds a terminal observation (a ledger written before
    adoption followed one) says the job was seen ended, not that it may still run."""
    ended = make_op(
        state=S.RESULT_TIMED_OUT, remote_state="succeeded", remote_status=RemoteStatus.SUCCEEDED
    )
    words = halted(ended)
    assert "may still" not in words and "seen ended 'succeeded'" in words, words
    assert "may still" not in attention_reason(ended)
    assert not remote_may_run(ended)
    running = replace(ended, remote_state="running", remote_status=RemoteStatus.RUNNING)
    assert "may still be running" in halted(running) and remote_may_run(running)


# -- a call in flight, and a crash -----------------------------------------------------------


def test_a_call_in_flight_is_not_a_crash() -> None:
    """In flight while its owner's lease holds (named with its recorded start when the
    attempts are given); a crash once the lease lapsed; neither claims what it cannot."""
    call = Attempt(
        attempt_id="at_1",
        operation_id="op_01J7Q5X4D4PA3D",
        kind=AttemptKind.CREATE,
        fence=1,
        actor="w1",
        started_at=T0,
        request={},
    )
    held = make_op(
        inflight_attempt="at_1", lease_owner="w1", lease_expires_at=T0 + timedelta(minutes=1)
    )
    now = T0 + timedelta(seconds=5)
    told = next_step(held, now, [call])
    assert (
        told == "the create call at_1 is in flight since 2025-03-08T14:22:11Z (5 s ago) (owner w1)"
    )
    assert next_step(held, now) == "the call at_1 is in flight (owner w1)"
    lapsed = next_step(held, T0 + timedelta(minutes=2), [call])
    assert lapsed.startswith("settle the create call at_1, sent 2025-03-08T14:22:11Z (2 min ago)")
    assert "interrupted by a crash: the lease of w1 lapsed at 2025-03-08T14:23:11Z" in lapsed
    released = next_step(replace(held, lease_owner=None, lease_expires_at=None), now, [call])
    assert "crash" not in released and "never recorded" in released, released


# -- the order of a cancel and the job's end --------------------------------------------------


def _intent(at_minute: int) -> CancelIntent:
    return CancelIntent(
        actor="alice",
        reason="not needed",
        expected_effect="stop",
        requested_at=T0 + timedelta(minutes=at_minute),
        request_id="req_1",
    )


def _ended(at_minute: int, provider_at: str | None = None) -> Observation:
    return Observation(
        operation_id="op_01J7Q5X4D4PA3D",
        source="status",
        observed_at=T0 + timedelta(minutes=at_minute),
        remote_state="succeeded",
        remote_status=RemoteStatus.SUCCEEDED,
        provider_updated_at=provider_at,
    )


def test_the_order_of_a_cancel_and_the_end_is_said_only_from_recorded_times() -> None:
    """Seen ended before the cancel; never sent; withdrawn before any create; and a provider
    time without a zone, which cannot be compared, leaves the order unknown."""
    op = make_op(state=S.SUCCEEDED, cancel_intent=_intent(5))
    before = cancel_order(op, [], [], [_ended(3)])
    assert before is not None and "seen ended succeeded at 2025-03-08T14:25:11Z, before" in before
    unsent = cancel_order(op, [], [], [_ended(7)])
    assert unsent is not None and "never reached the provider" in unsent, unsent
    sent = Attempt(
        attempt_id="at_c",
        operation_id=op.operation_id,
        kind=AttemptKind.CANCEL,
        fence=1,
        actor="w1",
        started_at=T0 + timedelta(minutes=6),
        request={},
        finished_at=T0 + timedelta(minutes=6),
        outcome="cancel_acknowledged",
    )
    zoneless = cancel_order(op, [], [sent], [_ended(7, "2025-03-08T14:24:00")])
    assert zoneless is not None and "is unknown" in zoneless, zoneless
    assert provider_time("2025-03-08T14:24:00") is None and provider_time("soon") is None
    assert provider_time("2025-03-08T14:24:00Z") == T0 + timedelta(minutes=1, seconds=49)
    withdrawn = make_op(state=S.FAILED, cancel_intent=_intent(1))
    steps = [_step(1, S.CREATE_PENDING, S.FAILED, E.WITHDRAWN)]
    told = cancel_order(withdrawn, steps, [], [])
    assert told is not None and told.startswith("withdrawn: ") and "completed" not in told


# -- a lookup named by its tier, with what it found -------------------------------------------


def test_a_lookup_is_named_by_the_tier_it_used_and_says_what_it_found() -> None:
    """A GET by our token, a filtered listing, a scan; no job, one, several, or not
    recorded (a ledger written before the ids were kept)."""
    by_key = replace(FULL, same_token_retry=False, list_by_reference=False)
    token = make_op(capabilities=replace(by_key, status_by_client_id=True))
    assert lookup_name(token, {"url": f"http://x/runs/{token.idempotency_token}"}) == (
        "lookup by our token"
    )
    assert lookup_name(token, {"url": f"http://x/runs/{token.operation_id}"}) == (
        "lookup by our operation id"
    )
    listing = make_op()  # the simulator's: a same-token retry, then a filtered listing
    assert lookup_name(listing, {}) == "lookup by a server-side filter on our reference"
    scan = make_op(capabilities=replace(FULL, scan_pages=3, scan_seconds=10.0))
    assert lookup_name(scan, {}) == "scan of a listing for our reference"
    assert lookup_name(make_op(capabilities=Capabilities()), {}) == "lookup"
    assert found_text({"found": []}) == "found no job"
    assert found_text({"found": ["j1"]}) == "found job j1"
    assert found_text({"scanned": {"pages": 2, "found": ["j1", "j2"]}}) == "found jobs j1, j2"
    assert found_text({"status": 404}) == "answered (what it found is not recorded)"


def test_an_ended_operation_claims_no_cause_its_record_lacks() -> None:
    """A job the provider reports cancelled may have been cancelled by anyone (no cancel of
    ours is needed for it); a result not collected may never have been tried (its deadline
    passed first)."""
    cancelled = halted(make_op(state=S.CANCELLED))
    assert cancelled == "nothing: the provider reported the job cancelled", cancelled
    unavailable = halted(make_op(state=S.RESULT_UNAVAILABLE))
    assert "could not be collected" not in unavailable and "not collected" in unavailable


def test_a_lost_create_answer_names_the_means_actually_used() -> None:
    """A provider with a same-token retry and a filtered listing (the simulator's): a job
    the listing found was found by the listing, not "by the provider's own token"; while
    looking, the means named is the next call's."""
    lost = [
        _step(1, S.CREATE_PENDING, S.CREATE_UNKNOWN, E.CREATE_AMBIGUOUS),
        _step(2, S.CREATE_UNKNOWN, S.RECONCILIATION, E.RECONCILE_LOOKUP),
    ]
    looking = reconciled_text(make_op(state=S.RECONCILIATION), lost)
    assert looking == (
        "a create answer was lost; jobtrail is looking for the job by a lookup (a server-side "
        "filter on our reference)"
    ), looking
    found = [*lost, _step(3, S.RECONCILIATION, S.ACCEPTED, E.RECONCILED_FOUND, remote_job_id="j")]
    told = reconciled_text(make_op(state=S.ACCEPTED), found)
    assert told == (
        "a create answer was lost; resolved by a server-side filter on our reference: the "
        "lookup found job j"
    ), told


def test_a_long_provider_reason_keeps_its_end() -> None:
    """The provider's failure reason, cut to its bound in the middle: its last words stay."""
    said = {"code": "invalid", "message": "value " + "x" * 2000 + " must be an integer"}
    at = Attempt(
        attempt_id="at_r",
        operation_id="op_01J7Q5X4D4PA3D",
        kind=AttemptKind.CREATE,
        fence=1,
        actor="w1",
        started_at=T0,
        request={},
        finished_at=T0,
        outcome="rejected",
        http_status=422,
        detail={"provider_error": said},
    )
    reason = failure_reason(make_op(state=S.FAILED), [at])
    assert reason is not None and reason.endswith("must be an integer (create answered HTTP 422)")
    assert len(reason) < 600, len(reason)
