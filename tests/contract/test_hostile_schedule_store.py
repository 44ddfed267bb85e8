"""The refusal count and its start are stored like every other field, on every store; and
waits stored before the clamp existed are brought back to their deadline on upgrade."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from jobtrail.core.states import State
from jobtrail.store import Store

from contract_records import at, entry, operation
from stores import LedgerDb


async def test_refused_reads_round_trip(store: Store) -> None:
    """refused_reads and refused_since are written and read back unchanged."""
    op = replace(
        operation(1),
        state=State.OBSERVING,
        remote_job_id="job_1",
        refused_reads=3,
        refused_since=at(12.5),
    )
    await store.create_operation(op, [entry(op, "operation.submitted")])
    assert await store.get(op.operation_id) == op


async def test_upgrade_brings_far_waits_back_to_their_deadline(ledger_db: LedgerDb) -> None:
    """An operation an older version scheduled past its result deadline is due at it."""
    base = operation(1)
    far = replace(
        base,
        state=State.OBSERVING,
        remote_job_id="job_1",
        next_poll_at=base.result_deadline + timedelta(days=30),
    )
    near = replace(operation(2), state=State.OBSERVING, remote_job_id="job_2")
    async with ledger_db.opened() as store:
        for op in (far, near):
            await store.create_operation(op, [entry(op, "operation.submitted")])
    # Undo migration 0006, as if the ledger had been written by the previous version.
    await ledger_db.raw_execute("DELETE FROM schema_migrations WHERE version = 6")
    await ledger_db.raw_execute("ALTER TABLE operations DROP COLUMN refused_reads")
    await ledger_db.raw_execute("ALTER TABLE operations DROP COLUMN refused_since")
    async with ledger_db.opened() as store:
        upgraded = await store.get(far.operation_id)
        untouched = await store.get(near.operation_id)
    assert upgraded is not None and upgraded.next_poll_at == far.result_deadline
    assert untouched == near
