"""docs/states.md matches the code: its transition table is the table."""

from __future__ import annotations

import re
from pathlib import Path

from jobtrail.core.states import EVIDENCE_MEANING, TRANSITIONS, State

DOC = (Path(__file__).resolve().parents[2] / "docs" / "states.md").read_text()


def test_transition_table_in_the_docs_is_the_code() -> None:
    """Every documented transition (with its evidence) exists, and none is missing."""
    documented = {}
    for source, target, evidence in re.findall(r"^\| `(\w+)` \| `(\w+)` \| (`.*`) \|$", DOC, re.M):
        documented[(State(source), State(target))] = set(re.findall(r"`(\w+)`", evidence))
    in_code = {pair: {e.value for e in ev} for pair, ev in TRANSITIONS.items()}
    assert documented == in_code


def test_every_state_and_evidence_is_described() -> None:
    """The docs describe each state and each kind of evidence."""
    for state in State:
        assert f"| `{state.value}` |" in DOC
    for evidence, meaning in EVIDENCE_MEANING.items():
        assert f"| `{evidence.value}` | {meaning} |" in DOC
