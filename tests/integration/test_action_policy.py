"""The action policy, enforced in the ledger on every store: who may submit, cancel, resolve,
extend and prune, and an audited refusal for everyone else."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from jobtrail.core import outcomes as o
from jobtrail.core.states import State
from jobtrail.errors import ActionRefused, InvalidInput, NotPermitted
from jobtrail.ledger import Ledger
from jobtrail.ledger.policy import Action, load_policy, parse_policy
from jobtrail.providers.file.config import ProviderSpec, parse_provider
from jobtrail.store import Store

from harness import simulator_doc


@pytest.fixture
def spec() -> ProviderSpec:
    # Nothing is sent in these tests: submit and cancel only write the ledger.
    return parse_provider(simulator_doc("http://127.0.0.1:9"))


def refusals(rows: list[object]) -> list[dict[str, object]]:
    entries = [json.loads(getattr(row, "entry")) for row in rows]  # noqa: B009
    return [e for e in entries if e["kind"] == "policy.refused"]


async def test_an_agent_cancels_only_what_it_submitted(store: Store, spec: ProviderSpec) -> None:
    """Under the default policy an agent cancels its own operation but not another's, and the
    refusal is audited with actor, action and operation."""
    ledger = Ledger(store)
    mine = await ledger.submit(spec, {"account": "a1"}, actor="agent:alpha")
    theirs = await ledger.submit(spec, {"account": "a2"}, actor="agent:beta")
    cancelled = await ledger.cancel(mine.operation_id, actor="agent:alpha", reason="mine")
    with pytest.raises(NotPermitted, match="only operations it submitted") as refused:
        await ledger.cancel(theirs.operation_id, actor="agent:alpha", reason="not mine")
    assert isinstance(refused.value, ActionRefused)
    assert cancelled.cancel_intent is not None
    assert (await ledger.get(theirs.operation_id)).cancel_intent is None
    (entry,) = refusals(await store.audit_rows())
    assert entry["actor"] == "agent:alpha" and entry["operation_id"] == theirs.operation_id
    assert entry["data"]["action"] == "cancel" and entry["data"]["owner"] == "agent:beta"


async def test_only_people_resolve_and_extend(store: Store, spec: ProviderSpec) -> None:
    """An agent's resolve or extend is refused before the core sees it; a person's reaches the
    core (which then judges the state)."""
    ledger = Ledger(store)
    op = await ledger.submit(spec, {"account": "a3"}, actor="agent:alpha")
    for decision in (o.Decision.MARK_FAILED, o.Decision.EXTEND):
        by_agent = o.HumanDecision(decision=decision, actor="agent:alpha", reason="r")
        with pytest.raises(NotPermitted):
            await ledger.decide(op.operation_id, by_agent)
    by_person = o.HumanDecision(decision=o.Decision.MARK_FAILED, actor="cli:alice", reason="r")
    with pytest.raises(ActionRefused) as core_refusal:
        await ledger.decide(op.operation_id, by_person)
    assert not isinstance(core_refusal.value, NotPermitted)
    actions = [e["data"]["action"] for e in refusals(await store.audit_rows())]
    assert actions == ["resolve", "extend"]
    assert (await ledger.get(op.operation_id)).state is State.CREATE_PENDING


async def test_a_policy_file_changes_who_may_do_what(
    store: Store, spec: ProviderSpec, tmp_path: Path
) -> None:
    """A policy file can let one agent cancel anything and forbid workers to submit."""
    path = tmp_path / "policy.toml"
    path.write_text(
        '[kinds.worker]\nsubmit = "none"\n\n[actors."agent:ops"]\ncancel = "any"\n',
        encoding="utf-8",
    )
    ledger = Ledger(store, actions=load_policy(str(path)))
    theirs = await ledger.submit(spec, {"account": "a4"}, actor="cli:bob")
    asked = await ledger.cancel(theirs.operation_id, actor="agent:ops", reason="ops may")
    with pytest.raises(NotPermitted):
        await ledger.submit(spec, {"account": "a5"}, actor="worker:w1", key="k5")
    with pytest.raises(NotPermitted):
        await ledger.prune(timedelta(days=1), actor="agent:ops", keep=lambda pruned: None)
    assert asked.cancel_intent is not None and asked.cancel_intent.actor == "agent:ops"
    assert await store.get_by_key("k5") is None
    assert [e["data"]["action"] for e in refusals(await store.audit_rows())] == [
        "submit",
        "prune",
    ]


def test_a_bad_policy_file_is_refused_with_what_is_allowed() -> None:
    """An unknown action or scope is an error naming the allowed words, not a silent deny."""
    with pytest.raises(InvalidInput, match="actions are submit, cancel"):
        parse_policy('[kinds.agent]\ndelete = "any"\n', "p.toml")
    with pytest.raises(InvalidInput, match="unknown kind"):
        parse_policy('[kinds.robot]\ncancel = "any"\n', "p.toml")
    assert load_policy(None).scope(Action.RESOLVE, "agent:x").value == "none"
