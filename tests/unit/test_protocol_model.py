"""The Promela model (model/protocol.pml) and the code speak of the same protocol: its
transition table is core/states.py's, state for state, edge for edge, evidence for
evidence; every move it makes is in that table; and every edge of the table is either
made by the model or named below as left to other tests."""

from __future__ import annotations

from jobtrail.core.states import ENDS_AUTOMATION, TRANSITIONS, Evidence, State
from protocol_model import MODEL, defines, moves, table

# Edges of the table the model never takes, each with the reason: the people's decisions
# (human_decision), the answers of providers other than the modelled one (a lookup-only
# provider with a visibility window: no token retry, no synchronous result, no capped scan,
# no contract violation), and a count of unreadable reads (modelled as refused ones).
NOT_MODELLED: dict[tuple[State, Evidence], str] = {
    (State.ACCEPTED, Evidence.HUMAN_DECISION): "a person adopts a job (or one a census found)",
    (State.FAILED, Evidence.HUMAN_DECISION): "a person marks it failed",
    (State.OBSERVING, Evidence.HUMAN_DECISION): "a person extends the result deadline",
    (State.CANCELLING, Evidence.HUMAN_DECISION): "a person extends the cancel deadline",
    (State.SUCCEEDED, Evidence.HUMAN_DECISION): "a person accepts a result as it is",
    (State.RESULT_COLLECTING, Evidence.HUMAN_DECISION): "a person has it collected again",
    (State.RESULT_COLLECTING, Evidence.SYNC_RESULT): "a create answered with its result",
    (State.RECONCILIATION, Evidence.CREATE_ACCEPTED): "a same-token retry's job id, checked",
    (State.RECONCILIATION, Evidence.CREATE_UNPROVEN): "a refused same-token retry",
    (State.NEEDS_HUMAN, Evidence.CREATE_UNPROVEN): "a refused retry, no lookup",
    (State.NEEDS_HUMAN, Evidence.NO_RECONCILIATION): "a provider with no reconciliation",
    (State.NEEDS_HUMAN, Evidence.CONTRACT_VIOLATION): "a second job id for our reference",
    (State.NEEDS_HUMAN, Evidence.LOOKUP_CAPPED): "a listing scan stopped at its cap",
    (State.NEEDS_HUMAN, Evidence.READS_UNREADABLE): "unreadable reads (as refused ones)",
}


def code_table() -> dict[tuple[str, str], frozenset[str]]:
    return {
        (a.name, b.name): frozenset(e.name for e in evidence)
        for (a, b), evidence in TRANSITIONS.items()
    }


def test_model_table_is_the_code_table() -> None:
    """The model's transition table lists exactly core/states.py's edges, each with the same
    evidence: a change to either fails here until the other follows."""
    model, code = table(), code_table()
    assert set(model) - set(code) == set(), "edges only in the model"
    assert set(code) - set(model) == set(), "edges only in core/states.py"
    differ = {edge: (model[edge], code[edge]) for edge in code if model[edge] != code[edge]}
    assert differ == {}, "edges whose evidence differs: (model, code)"


def test_model_states_and_evidence_are_the_code_names() -> None:
    """The model numbers every State in the code's order (so ENDS_AUTOMATION, the states
    from `succeeded` on, is the code's set) and gives every Evidence its own bit."""
    names = defines()
    assert {s.name: names.get(s.name) for s in State} == {s.name: i for i, s in enumerate(State)}
    ended = {s for s in State if names[s.name] >= names["SUCCEEDED"]}
    assert ended == ENDS_AUTOMATION
    bits = {e.name: names.get(f"EV_{e.name}") for e in Evidence}
    assert None not in bits.values(), f"evidence the model does not name: {bits}"
    numbers = sorted(n for n in bits.values() if n is not None)
    assert numbers == list(range(len(Evidence)))
    assert len(Evidence) <= 31, "evidence bits must fit in a Promela int"


def test_every_model_move_is_in_the_table() -> None:
    """Each move the model's processes make names a target and evidence some edge of the
    code's table allows (move() also checks the whole edge as the model runs)."""
    allowed = {(to, e) for (_, to), evidence in code_table().items() for e in evidence}
    assert moves() - allowed == set()


def test_every_table_edge_is_modelled_or_named_as_not() -> None:
    """Every (target, evidence) of the code's table is made by the model or listed in
    NOT_MODELLED with its reason, and nothing is in both: a new edge in core/states.py
    fails here until it is modelled or set aside here."""
    allowed = {(to, e) for (_, to), evidence in code_table().items() for e in evidence}
    made = moves()
    set_aside = {(s.name, e.name) for s, e in NOT_MODELLED}
    assert made & set_aside == set(), "listed as not modelled, yet the model makes them"
    assert allowed - made - set_aside == set(), "edges neither modelled nor set aside"
    assert set_aside - allowed == set(), "set aside, yet not in the table"


def test_ci_checks_the_model() -> None:
    """CI installs spin and makes a skipped SPIN check a failure, so the model is checked
    on every run (.ci/run)."""
    ci = (MODEL.parents[1] / ".ci" / "run").read_text(encoding="utf-8")
    assert "install -y -qq spin" in ci
    assert "export JOBTRAIL_REQUIRE_SPIN=1" in ci
