"""Task handles (migration 0013): durable, written once, stored only as the hash of their id,
bound to an owner, and gone only through `prune` (with their operation, or once expired)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from retention_records import ledger_at, observing, submitted, succeeded

from jobtrail.core.model import Operation
from jobtrail.core.tasks import TASK_PREFIX, TaskHandle, task_hash
from jobtrail.errors import StoreError
from jobtrail.ledger import Ledger
from jobtrail.store import Store

from stores import RAW_ERRORS, LedgerDb

OWNER = "agent:alpha"
MONTH = timedelta(days=30)


async def test_a_handle_is_durable_and_found_only_by_its_owner(ledger_db: LedgerDb) -> None:
    """A handle recorded by one store instance is read by another on the same ledger, by its
    id; another owner, a made-up id or an id of another shape find nothing."""
    async with ledger_db.opened() as store:
        ledger, _ = ledger_at(store)
        op = await submitted(ledger, 1)
        task_id, handle = await ledger.open_task(
            op, owner=OWNER, tool="submit_job", existing=False, ttl=timedelta(hours=1)
        )
    assert task_id.startswith(TASK_PREFIX) and op.operation_id not in task_id
    assert op.key not in task_id and len(task_id) >= len(TASK_PREFIX) + 64
    async with ledger_db.opened() as again:
        other, _ = ledger_at(again)
        found = await other.task(task_id, owner=OWNER)
        assert found == handle and found.ttl == timedelta(hours=1)
        assert await other.task(task_id, owner="agent:beta") is None
        assert await other.task(TASK_PREFIX + "0" * 64, owner=OWNER) is None
        assert await other.task(op.operation_id, owner=OWNER) is None
        assert await again.task(task_hash(task_id)) == handle


async def test_only_the_hash_of_a_task_id_is_stored(ledger_db: LedgerDb) -> None:
    """The task id appears nowhere in the database: a reader of it cannot use a handle."""
    async with ledger_db.opened() as store:
        ledger, _ = ledger_at(store)
        op = await submitted(ledger, 1)
        task_id, _ = await ledger.open_task(
            op, owner=OWNER, tool="wait_job", existing=True, ttl=None
        )
        rows = await store.audit_rows()
    assert all(task_id not in row.entry for row in rows)
    if ledger_db.kind == "sqlite":
        data = Path(ledger_db.url).read_bytes() + _wal(ledger_db.url)
        assert task_id.encode() not in data and task_hash(task_id).encode() in data


def _wal(path: str) -> bytes:
    wal = Path(path + "-wal")
    return wal.read_bytes() if wal.exists() else b""


async def test_handles_are_write_once_and_need_their_operation(ledger_db: LedgerDb) -> None:
    """A handle row cannot be changed in place, and none can name a missing operation."""
    async with ledger_db.opened() as opened:
        ledger, _ = ledger_at(opened)
        op = await submitted(ledger, 1)
        await ledger.open_task(op, owner=OWNER, tool="submit_job", existing=False, ttl=None)
        with pytest.raises(StoreError):
            await ledger.open_task(
                replace(op, operation_id="op_missing"),
                owner=OWNER,
                tool="submit_job",
                existing=False,
                ttl=None,
            )
    with pytest.raises(RAW_ERRORS):
        await ledger_db.raw_execute("UPDATE task_handles SET owner = 'agent:mallory'")


async def test_prune_removes_expired_handles_and_those_of_pruned_operations(
    store: Store,
) -> None:
    """Prune takes the handles of the operations it removes and every handle past its time
    to live; an expired handle's operation stays, and live handles of kept ones stay."""
    ledger, clock = ledger_at(store)
    done = await succeeded(ledger, 1)
    running = await observing(ledger, 2)
    _, of_done = await _open(ledger, done, None)
    _, short = await _open(ledger, running, timedelta(days=1))
    live_id, live = await _open(ledger, running, timedelta(days=90))
    clock.advance((MONTH + timedelta(days=1)).total_seconds())
    pruned = await ledger.prune(MONTH, actor="ops:ana", keep=lambda p: None)
    assert [p.operation.operation_id for p in pruned.operations] == [done.operation_id]
    assert pruned.expired_tasks == 1
    assert await store.task(of_done.task_hash) is None
    assert await store.task(short.task_hash) is None
    assert await store.get(running.operation_id) is not None
    assert await ledger.task(live_id, owner=OWNER) == live
    again = await ledger.prune(MONTH, actor="ops:ana", keep=lambda p: None)
    assert again.expired_tasks == 0 and not again.operations


async def _open(ledger: Ledger, op: Operation, ttl: timedelta | None) -> tuple[str, TaskHandle]:
    return await ledger.open_task(op, owner=OWNER, tool="submit_job", existing=False, ttl=ttl)
