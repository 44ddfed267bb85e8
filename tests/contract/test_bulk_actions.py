"""Bulk actions (migration 0016): a record is written once with every item's outcome, read
back whole by its id from another store instance, a second record under the same id
changes nothing, and the database refuses to change one."""

from __future__ import annotations

from datetime import timedelta

import pytest
from retention_records import ledger_at

from jobtrail.core.bulk import BulkAction, BulkItem, BulkRecord, ItemOutcome

from factories import T0
from stores import RAW_ERRORS, LedgerDb


def _record(bulk_id: str, at_offset: int, why: str) -> BulkRecord:
    return BulkRecord(
        bulk_id=bulk_id,
        actor="dashboard:alice",
        action=BulkAction.CANCEL,
        reason="the wrong account",
        created_at=T0 + timedelta(seconds=at_offset),
        items=(
            BulkItem(operation_id="op_1", outcome=ItemOutcome.DONE, why=why),
            BulkItem(operation_id="op_2", outcome=ItemOutcome.REFUSED, why="policy: «no»"),
            BulkItem(operation_id="op_3", outcome=ItemOutcome.SKIPPED, why="already ended"),
        ),
        asked={"which": "matching", "filter": {"actor": "agent:nightly"}},
    )


async def test_a_bulk_record_is_written_once_and_read_back_whole(ledger_db: LedgerDb) -> None:
    """Read by its id from a second store instance, equal to what was written; a second
    write under that id keeps the first; an unknown id finds nothing."""
    first = _record("bulk_0123456789", 0, "cancel intent recorded")
    async with ledger_db.opened() as store:
        ledger, _ = ledger_at(store)
        await ledger.record_bulk(first)
        await ledger.record_bulk(_record("bulk_0123456789", 5, "a second, later try"))
    async with ledger_db.opened() as again:
        other, _ = ledger_at(again)
        assert await other.bulk("bulk_0123456789") == first
        assert await other.bulk("bulk_unknown00") is None
        rows = [row.entry for row in await again.audit_rows()]
    assert sum('"bulk.action"' in entry for entry in rows) >= 1
    skipped = [entry for entry in rows if '"bulk.skipped"' in entry]
    assert skipped and all("op_3" in entry for entry in skipped)


async def test_a_bulk_record_cannot_be_changed(ledger_db: LedgerDb) -> None:
    """The table refuses an UPDATE: what a bulk action did stays as it was recorded."""
    async with ledger_db.opened() as store:
        ledger, _ = ledger_at(store)
        await ledger.record_bulk(_record("bulk_abcdefghij", 0, "done"))
    with pytest.raises(RAW_ERRORS):
        await ledger_db.raw_execute("UPDATE bulk_actions SET actor = 'dashboard:mallory'")
