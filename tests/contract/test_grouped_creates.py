"""Concurrent creates share write transactions (store/group.py), each answered as if it
had its own: a refused create fails alone, a key created twice in one batch is one
operation, and the audit chain holds every accepted create's entry in order."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from jobtrail.core.audit import verify
from jobtrail.errors import StoreError
from jobtrail.store import Store

from contract_records import entry, operation


class CountingWrites:
    """Counts the store's write transactions (its one write path, Store._write)."""

    def __init__(self, store: Any) -> None:
        self.count, self._inner = 0, store._write
        store._write = self

    def __call__(self, work: Any, *, sync: bool = True) -> Any:
        self.count += 1
        return self._inner(work, sync=sync)


async def test_concurrent_creates_share_commits(store: Store) -> None:
    ops = [operation(n) for n in range(40)]
    writes = CountingWrites(store)
    made = await asyncio.gather(
        *(store.create_operation(op, [entry(op, "operation.submitted")]) for op in ops)
    )
    assert made == ops
    assert writes.count < len(ops)  # one transaction each before the creates were grouped
    assert [await store.get(op.operation_id) for op in ops] == ops
    rows = await store.audit_rows()
    assert [row.columns["operation_id"] for row in rows] == [op.operation_id for op in ops]
    assert verify(rows, None).ok


async def test_a_refused_create_fails_alone(store: Store) -> None:
    """A create the database refuses (here: an operation id taken under another key) fails
    on its own; the creates that shared its batch are committed."""
    taken = operation(1)
    await store.create_operation(taken, [])
    clash = replace(operation(2), operation_id=taken.operation_id)
    others = [operation(n) for n in range(3, 8)]
    results = await asyncio.gather(
        *(store.create_operation(op, [entry(op, "operation.submitted")]) for op in others[:2]),
        store.create_operation(clash, [entry(clash, "operation.submitted")]),
        *(store.create_operation(op, [entry(op, "operation.submitted")]) for op in others[2:]),
        return_exceptions=True,
    )
    assert isinstance(results[2], StoreError)
    assert [r for i, r in enumerate(results) if i != 2] == others
    assert [await store.get(op.operation_id) for op in others] == others
    assert len(await store.audit_rows()) == len(others)


async def test_one_key_created_twice_in_a_batch_is_one_operation(store: Store) -> None:
    first = operation(1)
    second = replace(operation(2), key=first.key)
    made = await asyncio.gather(
        store.create_operation(first, [entry(first, "operation.submitted")]),
        store.create_operation(second, [entry(second, "operation.submitted")]),
    )
    assert made == [first, first]
    assert await store.get(second.operation_id) is None
    assert len(await store.audit_rows()) == 1


async def test_a_lone_create_is_one_transaction(store: Store) -> None:
    writes = CountingWrites(store)
    op = operation(1)
    assert await store.create_operation(op, []) == op
    assert writes.count == 1
