"""Opening a ledger migrates it; opening it again, or twice at once, is harmless."""

from __future__ import annotations

import asyncio

from contract_records import entry, operation
from stores import LedgerDb


async def test_reopening_keeps_the_ledger(ledger_db: LedgerDb) -> None:
    """A second open of a migrated ledger migrates nothing and sees what was written."""
    op = operation(1)
    async with ledger_db.opened() as store:
        await store.create_operation(op, [entry(op, "operation.submitted")])
    async with ledger_db.opened() as store:
        assert await store.get(op.operation_id) == op
        assert len(await store.audit_rows()) == 1
    async with ledger_db.opened() as store:
        assert await store.get_by_key(op.key) == op


async def test_racing_opens_of_a_new_ledger(ledger_db: LedgerDb) -> None:
    """Two opens of an empty ledger at the same moment both succeed and share one schema."""
    first, second = await asyncio.gather(ledger_db.open(), ledger_db.open())
    try:
        op = operation(1)
        await first.create_operation(op, [entry(op, "operation.submitted")])
        assert await second.get(op.operation_id) == op
    finally:
        await first.close()
        await second.close()
