"""Which provider drives an operation: stored with it, and a claim only takes what the
claimer has a provider for."""

from __future__ import annotations

import pytest
from test_observation_runs import _old_operation_insert

from jobtrail.core.model import Operation, ProviderKind
from jobtrail.store import Store

from contract_records import LEASE, at, operation
from stores import LedgerDb


def _code(n: int, name: str, second: float) -> Operation:
    return operation(
        n,
        provider=name,
        provider_config={"code": name, "version": "1.2", "settings": {"region": "eu"}},
        provider_kind=ProviderKind.CODE,
        provider_version="1.2",
        next_poll_at=at(second),
    )


async def test_the_driving_provider_is_stored(store: Store) -> None:
    """Kind, name and plug-in version round-trip; an HTTP operation is kind http."""
    code = _code(1, "sfn", 1)
    http = operation(2)
    for op in (code, http):
        await store.create_operation(op, [])
    stored = await store.get(code.operation_id)
    assert stored == code
    assert stored is not None and stored.provider_kind is ProviderKind.CODE
    assert stored.provider_version == "1.2"
    plain = await store.get(http.operation_id)
    assert plain is not None and plain.provider_kind is ProviderKind.HTTP
    assert plain.provider_version is None


async def test_a_claim_leaves_code_operations_of_providers_it_lacks(store: Store) -> None:
    """With the code providers it has named, a claim takes HTTP operations and those code
    operations only; the others stay unclaimed and untouched, and next_due ignores them."""
    sfn, athena, http = _code(1, "sfn", 1), _code(2, "athena", 2), operation(3)
    for op in (sfn, athena, http):
        await store.create_operation(op, [])
    assert await store.next_due(code=["athena"]) == at(2)
    assert await store.next_due(code=[]) == at(3)
    claims = await store.claim_due("worker:a", at(30), 10, LEASE, code=["athena"])
    assert {c.operation.operation_id for c in claims} == {
        athena.operation_id,
        http.operation_id,
    }
    assert await store.claim_due("worker:b", at(30), 10, LEASE, code=[]) == []
    assert (
        await store.claim_due("worker:b", at(30), 10, LEASE, only=sfn.operation_id, code=[]) == []
    )
    left = await store.get(sfn.operation_id)
    assert left == sfn and left is not None and left.lease_owner is None and left.fence == 0
    # The claimed ones are due again at their lease's expiry; sfn is not due for worker:b.
    assert await store.next_due(code=[]) == at(30) + LEASE
    assert await store.next_due() == at(1)  # no filter: every operation
    (claim,) = await store.claim_due("worker:c", at(30), 10, LEASE, code=["sfn"])
    assert claim.operation.operation_id == sfn.operation_id


async def test_operations_of_an_older_ledger_are_http(
    ledger_db: LedgerDb, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migration 0007 upgrades a ledger whose operations predate code providers: each reads
    back as an HTTP operation with no plug-in version, and a worker with no code provider
    claims it."""
    import jobtrail.store.postgres as pg_module
    import jobtrail.store.sqlite as sqlite_module
    from jobtrail.store.migrations import migrations

    def before_0007(dialect: str) -> list[tuple[int, str]]:
        return [(version, script) for version, script in migrations(dialect) if version < 7]

    for module in (sqlite_module, pg_module):
        monkeypatch.setattr(module, "migrations", before_0007)
    op = operation(1)
    async with ledger_db.opened():
        pass  # the schema as it was before 0007
    await ledger_db.raw_execute(_old_operation_insert(op))
    monkeypatch.undo()
    async with ledger_db.opened() as store:
        old = await store.get(op.operation_id)
        assert old is not None and old.provider_kind is ProviderKind.HTTP
        assert old.provider_version is None
        (claim,) = await store.claim_due("worker:a", at(1), 1, LEASE, code=[])
        assert claim.operation.operation_id == op.operation_id
