"""The header that named a status URL is stored with it, on every store."""

from __future__ import annotations

from dataclasses import replace

from jobtrail.core.states import State
from jobtrail.store import Store

from contract_records import entry, operation


async def test_status_via_round_trip(store: Store) -> None:
    """status_via is written and read back unchanged."""
    op = replace(
        operation(1),
        state=State.OBSERVING,
        remote_job_id="https://example.test/things/1",
        status_url="https://example.test/locations/1",
        status_via="Location",
    )
    await store.create_operation(op, [entry(op, "operation.submitted")])
    assert await store.get(op.operation_id) == op
