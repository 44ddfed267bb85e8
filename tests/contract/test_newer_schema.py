"""A ledger migrated by a newer jobtrail is refused, on every store, before anything is read
or written."""

from __future__ import annotations

import pytest

from jobtrail.errors import StoreError
from jobtrail.store.migrations import migrations

from contract_records import entry, operation
from stores import LedgerDb


async def test_a_newer_schema_is_refused(ledger_db: LedgerDb) -> None:
    """Opening a ledger whose recorded schema version is above every migration this jobtrail
    ships fails with the sentence that says to upgrade, and leaves the ledger as it was."""
    op = operation(1)
    async with ledger_db.opened() as store:
        await store.create_operation(op, [entry(op, "operation.submitted")])
    known = max(version for version, _ in migrations(ledger_db.kind))
    newer = known + 7
    await ledger_db.raw_execute(
        f"INSERT INTO schema_migrations (version, applied_at) VALUES ({newer}, "
        "'2030-01-01T00:00:00.000000Z')"
    )
    with pytest.raises(StoreError) as caught:
        await ledger_db.open()
    assert str(caught.value) == (
        f"this ledger was migrated by a newer jobtrail (schema {newer}, this one knows up to "
        f"{known}); upgrade jobtrail"
    )
    await ledger_db.raw_execute(f"DELETE FROM schema_migrations WHERE version = {newer}")
    async with ledger_db.opened() as store:
        assert await store.get(op.operation_id) == op
