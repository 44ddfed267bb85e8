"""History, observations and the audit log are append-only at the database itself."""

from __future__ import annotations

from dataclasses import replace

import pytest

from jobtrail.core.states import State
from jobtrail.store import Store
from jobtrail.store.changes import Verdict

from contract_records import at, entry, observation, operation, step
from stores import RAW_ERRORS, LedgerDb

TAMPERING = [
    "UPDATE transitions SET cause = 'rewritten'",
    "DELETE FROM transitions",
    "UPDATE observations SET remote_state = 'SUCCEEDED'",
    "DELETE FROM observations",
    "UPDATE audit_log SET entry = '{}'",
    "DELETE FROM audit_log",
]


async def _fill(store: Store) -> None:
    op = operation(1)
    await store.create_operation(op, [entry(op, "operation.submitted")])
    change = replace(step(op, at(5), to=State.ACCEPTED), observations=[observation(op, at(5))])
    (result,) = await store.commit([change])
    assert result.verdict is Verdict.OK


@pytest.mark.parametrize("statement", TAMPERING)
async def test_the_database_refuses_rewriting_history(ledger_db: LedgerDb, statement: str) -> None:
    """A plain connection cannot UPDATE or DELETE transitions, observations or audit rows."""
    async with ledger_db.opened() as store:
        await _fill(store)
        op_id = operation(1).operation_id
        before = (
            await store.history(op_id),
            await store.observations(op_id),
            await store.audit_rows(),
        )
        with pytest.raises(RAW_ERRORS, match="append-only"):
            await ledger_db.raw_execute(statement)
        after = (
            await store.history(op_id),
            await store.observations(op_id),
            await store.audit_rows(),
        )
    assert after == before
    assert all(before)
