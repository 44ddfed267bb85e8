"""Work done and billed (migration 0015) is stored with the operation and with the final
observation, read back unchanged, and frozen like the rest of an observation."""

from __future__ import annotations

from dataclasses import replace

import pytest

from jobtrail.core.model import ItemCounts, ResultSummary
from jobtrail.core.states import RemoteStatus, State
from jobtrail.store import Store
from jobtrail.store.changes import Verdict

from contract_records import at, entry, observation, operation, step
from stores import RAW_ERRORS, LedgerDb

USAGE = {"input_tokens": 1200, "output_tokens": 345.5, "requests": 3}


async def _ended(store: Store) -> str:
    op = operation(1, state=State.OBSERVING, remote_job_id="j1")
    await store.create_operation(op, [entry(op, "operation.submitted")])
    final = replace(
        observation(op, at(5), state="CANCELLED"),
        remote_status=RemoteStatus.CANCELLED,
        usage=USAGE,
    )
    result = ResultSummary(
        valid=True, items=ItemCounts(total=3, succeeded=1, failed=2), partial=True
    )
    change = replace(
        step(op, at(5), to=State.CANCELLED, usage=USAGE, result=result), observations=[final]
    )
    (done,) = await store.commit([change])
    assert done.verdict is Verdict.OK
    return op.operation_id


async def test_usage_and_a_partial_result_round_trip(store: Store) -> None:
    """The operation's usage and partial result, and the final observation's usage, are
    what was written (numbers kept as numbers)."""
    op_id = await _ended(store)
    op = await store.get(op_id)
    assert op is not None and op.usage == USAGE
    assert op.result is not None and op.result.partial
    (seen,) = await store.observations(op_id)
    assert seen.usage == USAGE and seen.remote_status is RemoteStatus.CANCELLED


async def test_an_operation_without_usage_reads_none(store: Store) -> None:
    """An operation whose provider reports nothing has no usage, not an empty one."""
    op = operation(2)
    await store.create_operation(op, [entry(op, "operation.submitted")])
    stored = await store.get(op.operation_id)
    assert stored is not None and stored.usage is None
    assert stored.result is None


async def test_the_final_observations_usage_cannot_be_rewritten(ledger_db: LedgerDb) -> None:
    """A plain connection cannot change what a terminal observation read as usage."""
    async with ledger_db.opened() as store:
        op_id = await _ended(store)
        with pytest.raises(RAW_ERRORS, match="append-only"):
            await ledger_db.raw_execute("UPDATE observations SET usage = '{\"requests\": 0}'")
        (seen,) = await store.observations(op_id)
    assert seen.usage == USAGE
