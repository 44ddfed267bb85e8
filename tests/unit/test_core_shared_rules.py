"""The rules every surface asks the core for (issue 20: one rule, one place): a dotted path
and a header, times and progress in words, what a state allows, what comes next and why,
the provider's failure reason, the retry-on-stale loop, the lease-alive test, when a
webhook schedules a status read, and the bulk actions' rules."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from jobtrail.core import outcomes as o
from jobtrail.core.allows import CANCELLABLE, cancellability, decision_refusal, extendable
from jobtrail.core.bulk import BULK_CAP, BulkAction, BulkItem, ItemOutcome, item_settled, too_many
from jobtrail.core.events import StatusRead, asks_owner, read_at, status_read
from jobtrail.core.failure import failure_reason
from jobtrail.core.leases import lease_alive, lease_left, may_send
from jobtrail.core.lookup import MISSING, find, header, placed, without
from jobtrail.core.model import Attempt, AttemptKind, CancelIntent, Capabilities, Observation
from jobtrail.core.nextstep import (
    PERSON_STATES,
    deadlines_shown,
    halted,
    needs_person,
    next_step,
    other_jobs_text,
)
from jobtrail.core.retry import on_stale
from jobtrail.core.states import REMOTE_MAY_RUN, RemoteStatus, State
from jobtrail.core.words import counted, progress_text, relative
from jobtrail.errors import ConcurrentUpdate

from factories import T0, make_op

ENDED = [s for s in State if s.ends_automation]


# -- lookup ---------------------------------------------------------------------------


def test_find_walks_mappings_and_lists_alike_for_every_reader() -> None:
    """One contract: members by name, list items by a digit index, a whole-path member
    first, and `missing` (None unless asked) for a path that leads nowhere."""
    doc = {"data": {"items": [{"id": "a"}, {"id": "b"}]}, "response.status": 200}
    assert find(doc, "data.items.1.id") == "b"
    assert find(doc, "response.status") == 200  # the member named by the whole path
    assert find(doc, "data.items.2.id") is None
    assert find(doc, "data.items.x") is None
    assert find(doc, "data.nothing", MISSING) is MISSING
    assert find({"a": None}, "a", MISSING) is None  # a JSON null is found, not missing
    assert find(["x", "y"], "1") == "y" and find("text", "a") is None


def test_a_dotted_path_is_written_and_removed_on_copies() -> None:
    """One writer for dotted paths (a client reference, a remote deadline): objects made on
    the way, the caller's document never changed, a path through a non-object refused."""
    body = {"metadata": {"team": "a"}, "n": 1}
    written = placed(body, "metadata.jobtrail_ref", "op_1")
    assert written == {"metadata": {"team": "a", "jobtrail_ref": "op_1"}, "n": 1}
    assert body == {"metadata": {"team": "a"}, "n": 1}
    assert placed({}, "a.b.c", 3) == {"a": {"b": {"c": 3}}}
    assert placed({"a": [1]}, "a.b", 3) is None
    assert find(written, "metadata.jobtrail_ref") == "op_1"
    assert without(written, "metadata.jobtrail_ref") == body
    assert without(body, "metadata.absent") == body
    assert without(body, "n.deeper") == body


def test_a_header_is_found_whatever_the_case_of_its_name() -> None:
    """Header names are case-insensitive (RFC 9110)."""
    headers = {"Retry-After": "5", "content-type": "text/csv"}
    assert header(headers, "retry-after") == "5"
    assert header(headers, "Content-Type") == "text/csv"
    assert header(headers, "X-Request-Id") is None


# -- words ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "words"),
    [
        (0.4, "now"),
        (-12, "12 s ago"),
        (-75, "75 s ago"),  # issue 20: the CLI said "1 min ago", the page "75 s ago"
        (-600, "10 min ago"),
        (5 * 3600, "in 5 h"),
        (-3 * 86400, "3 days ago"),
    ],
)
def test_relative_times_read_the_same_on_every_surface(seconds: float, words: str) -> None:
    """One wording of a time next to now, each unit used up to 1.5 of the next."""
    assert relative(T0 + timedelta(seconds=seconds), T0) == words


def test_progress_and_counts_in_words() -> None:
    """{"completed": 3, "total": 3} is 3/3; other progress as compact JSON; one operation."""
    assert progress_text({"completed": 3, "total": 3}) == "3/3"
    assert progress_text({"done": 146, "total": 500}) == "146/500"
    assert progress_text({"phase": "load"}) == '{"phase": "load"}'
    assert progress_text(None) == "-" and progress_text(42) == "42"
    assert counted(1, "operation") == "1 operation" and counted(2, "claim") == "2 claims"


# -- what a state allows ----------------------------------------------------------------


def test_cancel_is_offered_only_where_the_ledger_takes_it() -> None:
    """Cancellable: a job may run (or none was sent), no person decides first, and the
    provider declares a cancel; otherwise why not, in words."""
    for state in State:
        verdict = cancellability(make_op(state=state))
        assert verdict.allowed is (state in CANCELLABLE), state
        assert verdict.why
    no_cancel = make_op(state=State.OBSERVING, capabilities=Capabilities(cancel=False))
    refused = cancellability(no_cancel)
    assert not refused.allowed and "declares no cancel endpoint" in refused.why
    intent = CancelIntent(
        actor="alice", reason="stop", expected_effect="e", requested_at=T0, request_id="r"
    )
    asked = cancellability(make_op(state=State.CANCEL_REQUESTED, cancel_intent=intent))
    assert asked.asked and not asked.allowed and "asked by alice" in asked.why
    ended = cancellability(make_op(state=State.SUCCEEDED, cancel_intent=intent))
    assert not ended.asked and "already ended" in ended.why
    assert "human decision" in cancellability(make_op(state=State.NEEDS_HUMAN)).why


def test_decisions_fit_their_states_and_say_so_in_the_typed_words() -> None:
    """Each decision applies where it resolves something; a refusal uses `mark-failed`,
    not `mark_failed`, and a job id a decision would drop is refused."""
    waiting = make_op(state=State.NEEDS_HUMAN)
    assert decision_refusal(waiting, o.Decision.MARK_FAILED, None) is None
    dropped = decision_refusal(waiting, o.Decision.MARK_FAILED, "job_9")
    assert dropped is not None and "'mark-failed' would drop 'job_9'" in dropped
    done = decision_refusal(make_op(state=State.FAILED), o.Decision.RETRY_AS_NEW, None)
    assert done is not None and "'retry-as-new' does not apply in state failed" in done
    invalid = make_op(state=State.RESULT_VALIDATION_FAILED)
    for decision in (o.Decision.MARK_FAILED, o.Decision.ACCEPT_AS_IS, o.Decision.COLLECT_AGAIN):
        assert decision_refusal(invalid, decision, None) is None
    assert decision_refusal(invalid, o.Decision.ADOPT, "j") is not None
    timed_out = make_op(state=State.RESULT_TIMED_OUT)
    assert extendable(timed_out.state) == "result"
    wrong = decision_refusal(timed_out, o.Decision.EXTEND_CANCEL, None)
    assert wrong is not None and "--result-deadline" in wrong


# -- what comes next --------------------------------------------------------------------


def test_every_halted_state_says_who_acts_and_what_may_still_run() -> None:
    """No state that waits for a person says "nothing"; each says a person must act, and
    where the job may still run, says so and how to go on."""
    for state in ENDED:
        words = halted(make_op(state=state, remote_state="running"))
        assert words.startswith("a person must act") is (state in PERSON_STATES), state
        assert needs_person(make_op(state=state)) is (state in PERSON_STATES)
    unconfirmed = halted(make_op(state=State.CANCELLATION_UNCONFIRMED, remote_state="running"))
    assert "may still be running" in unconfirmed and "extend --cancel-deadline" in unconfirmed
    assert "last seen 'running'" in unconfirmed
    assert "nothing: the operation ended" not in unconfirmed
    invalid = halted(make_op(state=State.RESULT_VALIDATION_FAILED))
    assert "accept-as-is" in invalid and "collect-again" in invalid


def test_next_step_of_a_moving_operation_names_the_call_and_when() -> None:
    """A due call waits for a worker; a scheduled one says when."""
    due = make_op(state=State.OBSERVING, next_poll_at=T0)
    assert next_step(due, T0) == "poll status now (waiting for a worker)"
    later = replace(due, next_poll_at=T0 + timedelta(seconds=12))
    assert next_step(later, T0).startswith("poll status in 12 s (")


def test_only_the_deadlines_that_still_bear_are_shown() -> None:
    """No create deadline once the create is settled, none at all once ended, the result
    deadline after result_timed_out and the cancel deadline after cancellation_unconfirmed."""
    names = lambda op: [name for name, _ in deadlines_shown(op)]  # noqa: E731
    assert names(make_op()) == ["create", "result"]
    assert names(make_op(state=State.OBSERVING)) == ["result"]
    assert names(make_op(state=State.SUCCEEDED, cancel_deadline=T0)) == []
    assert names(make_op(state=State.RESULT_TIMED_OUT)) == ["result"]
    unconfirmed = make_op(state=State.CANCELLATION_UNCONFIRMED, cancel_deadline=T0)
    assert names(unconfirmed) == ["cancel"]


def test_after_an_adopt_the_other_jobs_are_named_with_what_to_do() -> None:
    """The jobs the provider tied to the operation that jobtrail no longer follows."""
    adopted = make_op(
        state=State.ACCEPTED, remote_job_id="job_a", conflicting_job_ids=("job_a", "job_b")
    )
    text = other_jobs_text(adopted)
    assert text is not None and text.startswith("job_b may still be running at reports")
    assert "cancel it with the provider" in text
    assert other_jobs_text(replace(adopted, state=State.NEEDS_HUMAN)) is None


# -- the provider's failure reason -----------------------------------------------------------


def _attempt(n: int, outcome: str, detail: object, status: int | None = None) -> Attempt:
    at = T0 + timedelta(seconds=n)
    return Attempt(
        attempt_id=f"at_{n}",
        operation_id="op_01J7Q5X4D4PA3D",
        kind=AttemptKind.STATUS if n else AttemptKind.CREATE,
        fence=1,
        actor="w",
        started_at=at,
        finished_at=at,
        request={},
        outcome=outcome,
        http_status=status,
        detail=detail,
    )


def test_the_failure_reason_is_the_providers_code_and_message() -> None:
    """Read from what the provider's reader recorded, never a dict; none on success."""
    failed = _attempt(1, "observed", {"provider_error": {"code": "E1", "message": "no rows"}})
    op = make_op(state=State.FAILED)
    assert failure_reason(op, [failed]) == "E1: no rows"
    assert failure_reason(replace(op, state=State.SUCCEEDED), [failed]) is None
    many = {"provider_error": {"code": "E1", "message": "m", "count": 3}}
    assert failure_reason(op, [_attempt(1, "observed", many)]) == "E1: m (and 2 more)"
    refused = _attempt(0, "rejected", {"body": {"detail": "x"}}, status=422)
    assert failure_reason(op, [refused]) == '{"detail": "x"} (create answered HTTP 422)'


def test_a_failure_that_has_since_gone_right_is_not_the_reason_now() -> None:
    """A 503 followed by an accepted create, or a refused read followed by good reads
    folded into an observation run, is history."""
    outage = _attempt(0, "ambiguous", {"error": "HTTP 503"}, status=503)
    op = make_op(state=State.OBSERVING)
    assert failure_reason(op, [outage]) == "HTTP 503 (create answered HTTP 503)"
    assert failure_reason(op, [outage, _attempt(1, "accepted", {})]) is None
    later = Observation(
        operation_id=op.operation_id,
        source="status",
        observed_at=T0,
        remote_state="running",
        remote_status=RemoteStatus.RUNNING,
        last_seen_at=T0 + timedelta(minutes=5),
    )
    assert failure_reason(op, [outage], [later]) is None


# -- retry on stale, leases, webhooks ---------------------------------------------------------


async def test_a_stale_step_is_tried_again_then_the_caller_gives_up() -> None:
    """None means stale: try again, at most `tries` times, then raise or fall back."""
    tries: list[int] = []

    async def twice_stale() -> str | None:
        tries.append(1)
        return "done" if len(tries) == 3 else None

    assert await on_stale(twice_stale, ConcurrentUpdate("x")) == "done" and len(tries) == 3

    async def never() -> str | None:
        return None

    with pytest.raises(ConcurrentUpdate, match="kept changing"):
        await on_stale(never, ConcurrentUpdate("kept changing"), tries=2)

    async def fallback() -> str:
        return "as it is"

    assert await on_stale(never, fallback, tries=2) == "as it is"


def test_a_lease_is_alive_until_the_moment_it_expires() -> None:
    """Held until its expiry, free at it; no owner is no lease."""
    held = make_op(lease_owner="w1", lease_expires_at=T0 + timedelta(seconds=30))
    assert lease_alive(held, T0) and lease_left(held, T0) == 30
    assert not lease_alive(held, T0 + timedelta(seconds=30))
    assert not lease_alive(replace(held, lease_owner=None), T0)
    assert lease_left(make_op(), T0) is None


def test_a_webhook_schedules_a_read_unless_ended_due_or_held() -> None:
    """Ended: nothing; held by a worker: left to it (asked for a read at release); due:
    kept; otherwise due now."""
    running = make_op(state=State.OBSERVING, next_poll_at=T0 + timedelta(minutes=5))
    assert status_read(running, T0) is StatusRead.SCHEDULED and read_at(StatusRead.SCHEDULED, T0)
    assert status_read(replace(running, next_poll_at=T0), T0) is StatusRead.ALREADY_DUE
    held = replace(running, lease_owner="w1", lease_expires_at=T0 + timedelta(seconds=9))
    assert status_read(held, T0) is StatusRead.LEFT_TO_OWNER and asks_owner(
        StatusRead.LEFT_TO_OWNER
    )
    ended = replace(running, state=State.SUCCEEDED)
    assert status_read(ended, T0) is StatusRead.NOT_NEEDED
    assert read_at(StatusRead.NOT_NEEDED, T0) is None and not asks_owner(StatusRead.NOT_NEEDED)


# -- bulk -------------------------------------------------------------------------------------


def test_a_bulk_action_is_capped_and_settles_item_by_item() -> None:
    """At most BULK_CAP operations; a done cancel settles when automation ends for its
    operation, everything else at once."""
    assert too_many(BULK_CAP) is None and "at most" in (too_many(BULK_CAP + 1) or "")
    done = BulkItem(operation_id="op", outcome=ItemOutcome.DONE, why="w")
    cancelling = make_op(state=State.CANCELLING)
    assert not item_settled(BulkAction.CANCEL, done, cancelling)
    assert item_settled(BulkAction.CANCEL, done, replace(cancelling, state=State.CANCELLED))
    assert item_settled(BulkAction.EXTEND_RESULT, done, cancelling)
    skipped = replace(done, outcome=ItemOutcome.SKIPPED)
    assert item_settled(BulkAction.CANCEL, skipped, cancelling)
    assert item_settled(BulkAction.CANCEL, done, None)  # pruned since


def test_remote_may_run_is_the_same_set_the_cancel_rule_starts_from() -> None:
    """Cancellable states are those where a job may run (or none was sent yet), less the
    ones a person decides first."""
    assert (REMOTE_MAY_RUN | {State.CREATE_PENDING}) - {
        State.NEEDS_HUMAN,
        State.CANCELLATION_UNCONFIRMED,
    } == CANCELLABLE


def test_a_call_with_an_effect_is_sent_only_inside_the_lease_it_was_renewed_for() -> None:
    """The lease ends no sooner than its length after the renewal was asked for: a call is
    sent only if its timeout and recording fit in what is left; an answer that came late
    (a partition healed) leaves too little, and nothing is sent."""
    assert may_send(0.05, call_timeout=30, lease_for=61, margin=1)
    assert may_send(30, call_timeout=30, lease_for=61, margin=1)
    assert not may_send(30.5, call_timeout=30, lease_for=61, margin=1)
    assert not may_send(45, call_timeout=5, lease_for=30, margin=1)
