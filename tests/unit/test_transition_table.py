"""The transition table: every move needs its listed evidence."""

from __future__ import annotations

import pytest

from jobtrail.core.states import (
    ENDS_AUTOMATION,
    EVIDENCE_MEANING,
    TRANSITIONS,
    Evidence,
    State,
    check_transition,
)
from jobtrail.errors import TransitionRefused

ARTICLE_MOVES = [
    (State.CREATE_PENDING, State.ACCEPTED),
    (State.ACCEPTED, State.OBSERVING),
    (State.OBSERVING, State.RESULT_COLLECTING),
    (State.RESULT_COLLECTING, State.SUCCEEDED),
    (State.CREATE_PENDING, State.CREATE_UNKNOWN),
    (State.CREATE_UNKNOWN, State.RECONCILIATION),
    (State.OBSERVING, State.CANCEL_REQUESTED),
    (State.CANCEL_REQUESTED, State.CANCELLING),
    (State.CANCELLING, State.CANCELLED),
    (State.OBSERVING, State.FAILED),
    (State.OBSERVING, State.RESULT_TIMED_OUT),
]


@pytest.mark.parametrize(("source", "target"), ARTICLE_MOVES)
def test_the_articles_model_is_in_the_table(source: State, target: State) -> None:
    """Every arrow of the article's state model is an allowed transition."""
    assert (source, target) in TRANSITIONS


def test_progress_is_not_evidence_of_success() -> None:
    """observing -> result_collecting needs a succeeded observation, not a running one."""
    with pytest.raises(TransitionRefused, match="succeeded"):
        check_transition(State.OBSERVING, State.RESULT_COLLECTING, Evidence.OBSERVED_RUNNING)


def test_sending_a_cancel_is_not_evidence_of_cancellation() -> None:
    """cancelling -> cancelled needs a remote cancelled observation, not an acknowledgement."""
    with pytest.raises(TransitionRefused):
        check_transition(State.CANCELLING, State.CANCELLED, Evidence.CANCEL_ACKNOWLEDGED)


def test_failed_never_goes_back_to_observing() -> None:
    """A move that is not in the table is refused whatever the evidence."""
    for evidence in Evidence:
        with pytest.raises(TransitionRefused, match="not in the transition table"):
            check_transition(State.FAILED, State.OBSERVING, evidence)


def test_succeeded_needs_a_validated_or_accepted_result() -> None:
    """The only ways into succeeded are result_collecting with a validated result, and a
    person's recorded acceptance of a result that failed validation."""
    into = {pair: ev for pair, ev in TRANSITIONS.items() if pair[1] is State.SUCCEEDED}
    assert into == {
        (State.RESULT_COLLECTING, State.SUCCEEDED): {Evidence.RESULT_VALIDATED},
        (State.RESULT_VALIDATION_FAILED, State.SUCCEEDED): {Evidence.HUMAN_DECISION},
    }


def test_cancelled_needs_a_remote_cancelled_observation() -> None:
    """Every way into cancelled requires an observation of the remote cancelled state."""
    into = [ev for (source, target), ev in TRANSITIONS.items() if target is State.CANCELLED]
    assert into and all(ev == {Evidence.OBSERVED_CANCELLED} for ev in into)


def test_terminal_states_only_leave_by_human_decision() -> None:
    """Automation never moves an operation out of a state that ends automation."""
    for (source, _), evidence in TRANSITIONS.items():
        if source in ENDS_AUTOMATION:
            assert evidence <= {Evidence.HUMAN_DECISION, Evidence.CANCEL_INTENT}


def test_every_evidence_kind_is_explained() -> None:
    """Refusal messages can name every evidence kind in words."""
    assert set(EVIDENCE_MEANING) == set(Evidence)
