"""Replaying a history: every step must be in the table, and each must start where the
previous one ended. The state a history replays to must be the state the record holds."""

from __future__ import annotations

from collections.abc import Iterable

from jobtrail.core.model import Transition
from jobtrail.core.states import State, check_transition
from jobtrail.errors import TransitionRefused


def replay(transitions: Iterable[Transition], start: State = State.CREATE_PENDING) -> State:
    state = start
    for number, transition in enumerate(transitions, 1):
        if transition.from_state is not state:
            raise TransitionRefused(
                f"history step {number} starts from {transition.from_state} "
                f"but the previous step ended in {state}"
            )
        check_transition(transition.from_state, transition.to_state, transition.evidence)
        state = transition.to_state
    return state
