"""Finding operations for the dashboard: filters, pages and the count of all matches."""

from __future__ import annotations

from jobtrail.core.states import State
from jobtrail.store import Store
from jobtrail.store.finding import OperationQuery

from contract_records import at, operation


async def test_filters_page_and_count(store: Store) -> None:
    """Each filter narrows the matches; a page holds `limit` of them, newest first, and the
    total counts every match, not just the page."""
    ops = [
        operation(
            n,
            provider="sim" if n % 2 else "other",
            actor="agent:a" if n < 6 else "cli:bob",
            state=State.NEEDS_HUMAN if n == 3 else State.CREATE_PENDING,
        )
        for n in range(10)
    ]
    for op in ops:
        await store.create_operation(op, [])
    first = await store.find_operations(OperationQuery(limit=4))
    second = await store.find_operations(OperationQuery(limit=4, offset=4))
    sim = await store.find_operations(OperationQuery(provider="sim", actor="agent:a"))
    human = await store.find_operations(OperationQuery(states=[State.NEEDS_HUMAN]))
    keyed = await store.find_operations(OperationQuery(key="key-7"))
    window = await store.find_operations(OperationQuery(created_from=at(2), created_until=at(5)))
    late = await store.find_operations(OperationQuery(late_before=at(1.5)))
    assert first.total == second.total == 10
    assert [o.operation_id for o in first.operations + second.operations] == [
        o.operation_id for o in reversed(ops)
    ][:8]
    assert [o.key for o in sim.operations] == ["key-5", "key-3", "key-1"] and sim.total == 3
    assert [o.key for o in human.operations] == ["key-3"]
    assert [o.key for o in keyed.operations] == ["key-7"]
    assert [o.key for o in window.operations] == ["key-4", "key-3", "key-2"]
    assert [o.key for o in late.operations] == ["key-1", "key-0"]
