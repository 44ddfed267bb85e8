"""Reads under the action policy, in the ledger on every store (issue 36): `read_as` gives an
agent its own operation and refuses another's, audited; `readable_operations` lists what the
policy lets it read (own, any, none), a full page of it; a policy file that does not name
`read` keeps the default's."""

from __future__ import annotations

import json

import pytest

from jobtrail.errors import NotPermitted
from jobtrail.ledger import Ledger
from jobtrail.ledger.policy import Action, Scope, parse_policy
from jobtrail.providers.file.config import ProviderSpec, parse_provider
from jobtrail.store import Store

from harness import simulator_doc


@pytest.fixture
def spec() -> ProviderSpec:
    # Nothing is sent in these tests: submit only writes the ledger.
    return parse_provider(simulator_doc("http://127.0.0.1:9"))


async def test_an_agent_reads_its_own_and_is_refused_anothers(
    store: Store, spec: ProviderSpec
) -> None:
    """alpha reads its operation, by id and by key; beta is refused it, and the refusal is
    audited with the action `read` and the owner; a person reads both."""
    ledger = Ledger(store)
    mine = await ledger.submit(spec, {"account": "a1"}, key="k-alpha", actor="agent:alpha")
    assert (await ledger.read_as(mine.operation_id, "agent:alpha")).key == "k-alpha"
    assert (await ledger.read_as("k-alpha", "agent:alpha")).operation_id == mine.operation_id
    assert (await ledger.read_as("k-alpha", "cli:alice")).operation_id == mine.operation_id
    with pytest.raises(NotPermitted, match=r"agent:beta may not read operation .* only operations"):
        await ledger.read_as("k-alpha", "agent:beta")
    entries = [json.loads(row.entry) for row in await store.audit_rows()]
    refused = [e for e in entries if e["kind"] == "policy.refused"]
    assert [
        (e["actor"], e["operation_id"], e["data"]["action"], e["data"]["owner"]) for e in refused
    ] == [("agent:beta", mine.operation_id, "read", "agent:alpha")]


async def test_a_listing_holds_only_what_may_be_read(store: Store, spec: ProviderSpec) -> None:
    """With `own`, a page of an agent's own operations even when others' are newer; with
    `any`, all; with `none`, nothing."""
    ledger = Ledger(store)
    alpha = [await ledger.submit(spec, {"n": n}, actor="agent:alpha") for n in range(3)]
    for n in range(4):
        await ledger.submit(spec, {"m": n}, actor="agent:beta")
    own = await ledger.readable_operations("agent:alpha", limit=3)
    assert {op.operation_id for op in own} == {op.operation_id for op in alpha}
    assert len(await ledger.readable_operations("cli:alice", limit=50)) == 7
    ledger.actions = parse_policy('[actors."agent:alpha"]\nread = "none"\n', "test policy")
    assert await ledger.readable_operations("agent:alpha") == []
    assert len(await ledger.readable_operations("agent:beta")) == 4


def test_a_policy_file_without_read_keeps_the_defaults_read() -> None:
    """A kind's table written before reads were governed keeps the default `read`; one that
    names it is taken at its word."""
    old = parse_policy('[kinds.agent]\nsubmit = "any"\ncancel = "any"\n', "old.toml")
    assert old.scope(Action.READ, "agent:a") is Scope.OWN
    assert old.scope(Action.CANCEL, "agent:a") is Scope.ANY
    assert old.scope(Action.READ, "cli:alice") is Scope.ANY
    new = parse_policy('[kinds.agent]\nsubmit = "any"\nread = "any"\n', "new.toml")
    assert new.scope(Action.READ, "agent:a") is Scope.ANY
