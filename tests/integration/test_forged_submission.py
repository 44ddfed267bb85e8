"""A submission rewritten behind the ledger's back (issue 19): its request body, its
idempotency token or its owner changed by an UPDATE of the operation row. `audit verify
--replay` names each (Ledger.forged_operations), and the worker sends no create for such an
operation: it refuses, saying why, and the simulator never hears of it. Real ledgers
(SQLite file, PostgreSQL), the simulator over loopback, the real worker."""

from __future__ import annotations

import asyncio

import pytest

from jobtrail.core.model import AttemptKind
from jobtrail.core.states import State

from harness import Harness

BODY = {"account": "a", "amount": 10}
FORGERIES = {
    # the body: still valid JSON, another amount (the fingerprint column left as it was)
    "request": (
        "UPDATE operations SET request = replace(request, '\"amount\":10', '\"amount\":99999')",
        "forged request",
    ),
    "idempotency token": (
        "UPDATE operations SET idempotency_token = 'tok_forged_0123456789'",
        "forged idempotency token",
    ),
    "owner": ("UPDATE operations SET actor = 'mallory'", "forged owner"),
}


async def raw(rig: Harness, sql: str) -> None:
    from stores import LedgerDb

    await LedgerDb(kind=rig.kind, url=rig.db).raw_execute(sql)


@pytest.mark.parametrize("what", list(FORGERIES))
async def test_replay_names_a_rewritten_submission(rig: Harness, what: str) -> None:
    sql, word = FORGERIES[what]
    op = await rig.submit(BODY)
    await rig.run()
    assert (await rig.op(op)).state is State.SUCCEEDED
    assert await rig.rt.ledger.forged_operations() == []
    await raw(rig, sql)
    (forged,) = await rig.rt.ledger.forged_operations()
    assert forged.operation_id == op.operation_id and word in forged.problem, forged


@pytest.mark.parametrize("what", list(FORGERIES))
async def test_a_rewritten_submission_is_never_sent(rig: Harness, what: str) -> None:
    sql, word = FORGERIES[what]
    op = await rig.submit(BODY)
    await raw(rig, sql)
    await asyncio.wait_for(rig.run(), timeout=60)
    assert rig.sim.state.counts["create"] == 0, "nothing reached the provider"
    assert rig.sim.state.jobs == {}
    done = await rig.op(op)
    assert done.state is State.FAILED
    (create,) = [
        a
        for a in await rig.rt.ledger.store.attempts(op.operation_id)
        if a.kind is AttemptKind.CREATE
    ]
    assert create.detail["sent"] is False
    assert create.detail["error"].startswith("not sent: ") and word in create.detail["error"]
