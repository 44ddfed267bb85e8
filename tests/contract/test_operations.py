"""Creating and reading operations."""

from __future__ import annotations

from dataclasses import fields, replace
from datetime import datetime, timedelta

from jobtrail.core.states import State
from jobtrail.store import Store

from contract_records import at, entry, operation, rich_operation, step


def _times(op: object) -> list[datetime]:
    found = [getattr(op, f.name) for f in fields(op)]  # type: ignore[arg-type]
    return [value for value in found if isinstance(value, datetime)]


async def test_create_round_trips_every_field(store: Store) -> None:
    """A created operation reads back equal, by id and by key, with every field intact."""
    op = rich_operation()
    assert await store.create_operation(op, [entry(op, "operation.submitted")]) == op
    by_id, by_key = await store.get(op.operation_id), await store.get_by_key(op.key)
    assert by_id == op
    assert by_key == op
    assert by_id is not None and by_id.cancel_intent == op.cancel_intent
    assert by_id.result == op.result and by_id.request.body == op.request.body


async def test_times_come_back_tz_aware_utc(store: Store) -> None:
    """Every datetime read back from the store is timezone-aware UTC, to the microsecond."""
    op = rich_operation()
    await store.create_operation(op, [])
    got = await store.get(op.operation_id)
    assert got is not None and got.cancel_intent is not None
    times = [*_times(got), got.cancel_intent.requested_at]
    assert len(times) == 7
    assert all(t.utcoffset() == timedelta(0) for t in times)
    assert got.updated_at == at(95.000001)


async def test_create_with_existing_key_returns_the_existing_operation(store: Store) -> None:
    """Creating a second operation under a known key returns the first, unchanged."""
    first = operation(1)
    await store.create_operation(first, [entry(first, "operation.submitted")])
    second = replace(operation(2), key=first.key)
    assert await store.create_operation(second, [entry(second, "operation.submitted")]) == first
    assert await store.get(second.operation_id) is None
    assert len(await store.audit_rows()) == 1


async def test_unknown_ids_and_keys_read_as_none(store: Store) -> None:
    """get and get_by_key answer None for what was never created."""
    assert await store.get("op_missing") is None
    assert await store.get_by_key("missing") is None


async def test_list_operations_newest_first_with_state_filter(store: Store) -> None:
    """list_operations gives the newest first, honours limit, and filters by state."""
    ops = [operation(n) for n in range(5)]
    for op in reversed(ops):  # insertion order must not matter
        await store.create_operation(op, [])
    await store.commit([step(ops[1], at(10), to=State.ACCEPTED)])
    await store.commit([step(ops[3], at(10), to=State.FAILED)])
    listed = await store.list_operations()
    assert [op.operation_id for op in listed] == [op.operation_id for op in reversed(ops)]
    assert [op.key for op in await store.list_operations(limit=2)] == ["key-4", "key-3"]
    filtered = await store.list_operations(states=[State.ACCEPTED, State.FAILED])
    assert [op.key for op in filtered] == ["key-3", "key-1"]
    assert await store.list_operations(states=[State.SUCCEEDED]) == []


async def test_count_by_state(store: Store) -> None:
    """count_by_state counts operations per current state, omitting empty states."""
    assert await store.count_by_state() == {}
    ops = [operation(n) for n in range(4)]
    for op in ops:
        await store.create_operation(op, [])
    await store.commit([step(ops[0], at(10), to=State.ACCEPTED)])
    assert await store.count_by_state() == {State.CREATE_PENDING: 3, State.ACCEPTED: 1}


async def test_next_due_is_the_earliest_poll_time(store: Store) -> None:
    """next_due is the earliest next_poll_at of any operation, None when nothing is due."""
    assert await store.next_due() is None
    await store.create_operation(operation(1, next_poll_at=None), [])
    assert await store.next_due() is None
    await store.create_operation(operation(2, next_poll_at=at(50)), [])
    await store.create_operation(operation(3, next_poll_at=at(20)), [])
    assert await store.next_due() == at(20)


async def test_find_by_remote_job(store: Store) -> None:
    """find_by_remote_job finds the operation holding a provider's job id (the newest when
    two do), and None for an unknown job or another provider's."""
    old, new, other = operation(1), operation(2), operation(3, provider="other")
    for op in (old, new, other):
        await store.create_operation(op, [])
    for op in (old, new):
        await store.commit([step(op, at(10), to=State.ACCEPTED, remote_job_id="job_1")])
    found = await store.find_by_remote_job("sim", "job_1")
    assert found is not None and found.operation_id == new.operation_id
    assert found == await store.get(new.operation_id)
    assert await store.find_by_remote_job("other", "job_1") is None
    assert await store.find_by_remote_job("sim", "job_2") is None
