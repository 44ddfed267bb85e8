"""The audit log: one hash chain across every writer, keyed when a key is configured."""

from __future__ import annotations

import asyncio

from jobtrail.core.audit import AuditEntry, verify
from jobtrail.core.states import State
from jobtrail.store import Store

from contract_records import at, entry, operation, step
from stores import LedgerDb


async def test_rows_form_one_verified_chain(store: Store) -> None:
    """Entries from creates, commits and append_audit are numbered 1..n, each linked to the
    one before, and verify as intact."""
    op = operation(1)
    await store.create_operation(op, [entry(op, "operation.submitted")])
    await store.commit([step(op, at(2), to=State.ACCEPTED)])
    await store.append_audit(
        [AuditEntry(at=at(3), operation_id=None, kind="worker.started", actor="w", data={})]
    )
    rows = await store.audit_rows()
    assert [r.seq for r in rows] == [1, 2, 3]
    assert [r.prev_hash for r in rows[1:]] == [r.hash for r in rows[:-1]]
    assert verify(rows, None).ok
    assert [r.seq for r in await store.audit_rows(op.operation_id)] == [1, 2]


async def test_append_audit_of_nothing_adds_nothing(store: Store) -> None:
    """append_audit([]) leaves the log as it was."""
    await store.append_audit([])
    assert await store.audit_rows() == []


async def test_keyed_chain_verifies_only_with_its_key(ledger_db: LedgerDb) -> None:
    """With an audit key the chain is an HMAC chain: it verifies with that key, and neither
    without a key nor with another one."""
    async with ledger_db.opened(audit_key=b"k1") as store:
        for n in range(3):
            op = operation(n)
            await store.create_operation(op, [entry(op, "operation.submitted")])
            await store.commit([step(op, at(10), to=State.ACCEPTED)])
        rows = await store.audit_rows()
    assert len(rows) == 6
    assert verify(rows, b"k1").ok
    assert not verify(rows, None).ok
    assert not verify(rows, b"k2").ok


async def test_concurrent_writers_extend_one_chain(ledger_db: LedgerDb) -> None:
    """Two store instances committing at the same time never link to the same previous
    entry: the log stays one intact chain with no gaps."""
    async with ledger_db.opened() as one, ledger_db.opened() as two:
        ops = [operation(n) for n in range(24)]
        for op in ops:
            await one.create_operation(op, [entry(op, "operation.submitted")])

        async def writer(store: Store, mine: list[int]) -> None:
            for n in mine:
                await store.commit([step(ops[n], at(10), to=State.ACCEPTED)])
                await store.append_audit([entry(ops[n], "note", at(11))])

        await asyncio.gather(writer(one, list(range(0, 24, 2))), writer(two, list(range(1, 24, 2))))
        rows = await two.audit_rows()
    assert [r.seq for r in rows] == list(range(1, 24 * 3 + 1))
    assert len({r.prev_hash for r in rows}) == len(rows)
    assert verify(rows, None).ok
