"""The census's pure rules: what a listed job is to the ledger, what a provider's listing
lets a census see, how a cut-short listing is told (no network, no store)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from jobtrail.core import outcomes as o
from jobtrail.core.allows import awaiting_adoption
from jobtrail.core.census import (
    Category,
    Listed,
    Reach,
    Sight,
    classify,
    counts,
    sight,
    sight_rule,
    summary,
)
from jobtrail.core.model import Capabilities, Operation
from jobtrail.core.states import Evidence, RemoteStatus, State
from jobtrail.errors import ActionRefused

from factories import FULL, T0, make_op, step

OP = "op_01J7Q5X4D4PA3D"


def job(
    job_id: str = "job_1", marker: str | None = OP, status: RemoteStatus = RemoteStatus.RUNNING
) -> Listed:
    return Listed(job_id=job_id, marker=marker, state=status.value, status=status, created=T0)


def test_the_job_of_a_live_operation_is_followed() -> None:
    """A running job that a live operation follows needs nothing."""
    op = make_op(state=State.OBSERVING, remote_job_id="job_1")
    found = classify(job(), holder=op, named=op)
    assert found.category is Category.FOLLOWED
    assert found.operation_id == OP


@pytest.mark.parametrize(
    "state",
    [
        State.RESULT_TIMED_OUT,
        State.CANCELLATION_UNCONFIRMED,
        State.NEEDS_HUMAN,
        State.FAILED,
    ],
)
def test_an_ended_operation_whose_job_runs_on_is_ended_here(state: State) -> None:
    """An operation ended here while the provider still runs its job."""
    op = make_op(state=state, remote_job_id="job_1")
    assert classify(job(), holder=op, named=op).category is Category.ENDED_HERE


def test_an_ended_operation_whose_job_ended_too_is_followed() -> None:
    """Both sides ended: nothing to do."""
    op = make_op(state=State.SUCCEEDED, remote_job_id="job_1")
    done = job(status=RemoteStatus.SUCCEEDED)
    assert classify(done, holder=op, named=op).category is Category.FOLLOWED


def test_a_job_whose_marker_names_no_operation_is_unknown_here() -> None:
    """Restored from an older backup: the marker names an operation the ledger lacks."""
    found = classify(job(), holder=None, named=None)
    assert found.category is Category.UNKNOWN_HERE
    assert found.operation_id == OP


def test_an_adopted_job_is_followed_by_its_new_operation() -> None:
    """After adoption the job's holder is found by its id, whatever its marker names."""
    adopted = make_op(operation_id="op_NEW", state=State.OBSERVING, remote_job_id="job_1")
    assert classify(job(), holder=adopted, named=None).category is Category.FOLLOWED


def test_a_job_without_marker_is_not_ours() -> None:
    """No marker, no holder: counted, not ours."""
    assert classify(job(marker=None), holder=None, named=None).category is Category.NOT_OURS


def test_a_job_never_seen_by_an_operation_following_another_is_a_second_job() -> None:
    """The evidence of a duplicate."""
    op = make_op(state=State.OBSERVING, remote_job_id="job_1")
    found = classify(job("job_2"), holder=None, named=op)
    assert found.category is Category.SECOND_JOB
    assert "DUPLICATE" in found.knows


@pytest.mark.parametrize("state", [State.CREATE_UNKNOWN, State.RECONCILIATION])
def test_the_job_of_a_create_in_doubt_is_not_a_second_job(state: State) -> None:
    """An operation that has not named its job yet is looking for this one."""
    op = make_op(state=state, remote_job_id=None)
    assert classify(job(), holder=None, named=op).category is Category.FOLLOWED


def test_a_create_in_doubt_that_ended_while_its_job_runs_is_ended_here() -> None:
    """needs_human with no job named, and the provider runs one under its marker."""
    op = make_op(state=State.NEEDS_HUMAN, remote_job_id=None)
    assert classify(job(), holder=None, named=op).category is Category.ENDED_HERE


def test_a_known_twin_is_never_a_second_job() -> None:
    """A conflicting job the operation recorded, still running, is ended here (a twin)."""
    op = make_op(state=State.OBSERVING, remote_job_id="job_1", conflicting_job_ids=("job_2",))
    found = classify(job("job_2"), holder=None, named=op)
    assert found.category is Category.ENDED_HERE
    assert "twin" in found.knows
    ended = job("job_2", status=RemoteStatus.CANCELLED)
    assert classify(ended, holder=None, named=op).category is Category.FOLLOWED


def test_counts_name_every_category() -> None:
    """Zero counts are named too, so "a second job: 0" is always said."""
    tally = counts([classify(job(), holder=None, named=None)])
    assert tally[Category.UNKNOWN_HERE] == 1
    assert tally[Category.SECOND_JOB] == 0
    assert "a second job: 0" in summary(tally)


def test_a_line_names_job_state_age_and_what_is_known() -> None:
    """One line per job."""
    line = classify(job(), holder=None, named=None).line(T0 + timedelta(hours=2))
    assert line.startswith("job_1  running  ")
    assert "ago" in line and OP in line


@pytest.mark.parametrize(
    ("caps", "seen", "words"),
    [
        (Capabilities(list_by_reference=True, scan_pages=5, scan_seconds=30), Sight.LISTING,
         "every job of the listing"),
        (Capabilities(list_by_reference=True), Sight.PER_OPERATION, "server-side filter"),
        (Capabilities(status_by_client_id=True), Sight.PER_OPERATION, "the lookup by our key"),
        (Capabilities(same_token_retry=True), Sight.NONE, "nothing"),
        (FULL, Sight.PER_OPERATION, "never a job this ledger holds no operation for"),
    ],
)  # fmt: skip
def test_what_a_census_can_see_follows_the_tier(
    caps: Capabilities, seen: Sight, words: str
) -> None:
    """One sentence per provider, from its declared listing."""
    assert sight(caps) is seen
    assert words in sight_rule(caps)


def test_a_cut_short_listing_says_how_far_it_got() -> None:
    """Requests made, jobs listed, and why it stopped."""
    reach = Reach(requests=2, listed=200, complete=False, stopped="its cap of 2 pages")
    assert reach.words() == (
        "2 listing requests, 200 jobs listed: cut short, its cap of 2 pages; older jobs "
        "were not seen"
    )


def test_a_census_that_listed_nothing_says_why() -> None:
    """No request made: no "cut short", only why nothing was listed."""
    reach = Reach(requests=0, listed=0, complete=False, stopped="no listing to read")
    assert reach.words() == "nothing was listed: no listing to read"


def test_a_code_provider_without_a_listing_is_seen_as_seeing_nothing() -> None:
    """A code provider with no `list_jobs` sees nothing, whatever its tier, in one sentence."""
    caps = Capabilities(list_by_reference=True, scan_pages=5)
    assert sight(caps, code=True) is Sight.NONE
    assert sight_rule(caps, code=True).startswith("nothing: the code provider offers no listing")


def test_a_code_provider_with_a_listing_sees_every_category() -> None:
    """A code provider's own listing is read: its sentence, then what the census finds."""
    caps = Capabilities()
    assert sight(caps, code=True, listing="every execution") is Sight.LISTING
    rule = sight_rule(caps, code=True, listing="every execution")
    assert rule.startswith("every execution: followed, ended here, unknown here, a second job")


def adopt_decision(job_id: str, read: bool = True) -> o.HumanDecision:
    observed = o.Observed(remote_state="in_progress", remote_status=RemoteStatus.RUNNING)
    return o.HumanDecision(
        decision=o.Decision.ADOPT,
        actor="alice",
        reason="restored from backup",
        job_id=job_id,
        request_id="req_1",
        read=observed if read else None,
    )


def recorded_for_adoption() -> Operation:
    return make_op(candidate_job_id="job_9", next_poll_at=None)


def test_an_operation_recorded_for_adoption_is_accepted_on_a_person_word() -> None:
    """The job's status read is its first observation; the worker polls it next."""
    op = recorded_for_adoption()
    assert awaiting_adoption(op)
    applied = step(op, adopt_decision("job_9"), at=T0)
    assert applied.operation.state is State.ACCEPTED
    assert applied.operation.remote_job_id == "job_9"
    assert applied.operation.next_poll_at == T0
    assert applied.transitions[-1].evidence is Evidence.HUMAN_DECISION
    assert applied.observations and applied.observations[0].remote_state == "in_progress"


def test_adoption_takes_only_the_job_recorded_for_it() -> None:
    """Another job id is refused; a pending operation that may be sent is never adopted."""
    with pytest.raises(ActionRefused, match="recorded to adopt 'job_9', not 'job_8'"):
        step(recorded_for_adoption(), adopt_decision("job_8"), at=T0)
    pending = make_op()  # an ordinary submit: due, may be sent
    assert not awaiting_adoption(pending)
    with pytest.raises(ActionRefused, match="does not apply in state create_pending"):
        step(pending, adopt_decision("job_9"), at=T0)
