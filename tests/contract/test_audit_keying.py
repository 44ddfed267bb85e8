"""A keyed chain stays keyed (issue 19): a ledger whose audit chain was started with a key
refuses every write from a store opened without that key (none, or another), with one
sentence naming what is missing and never the key; an unkeyed chain refuses a keyed writer
the same way. Nothing is written by a refused writer, so the chain verifies with its key."""

from __future__ import annotations

import pytest

from jobtrail.core.audit import verify
from jobtrail.core.states import State
from jobtrail.errors import StoreError
from jobtrail.store import Store

from contract_records import LEASE, at, entry, operation, step
from stores import LedgerDb

KEY, OTHER = b"the-right-key-0123456789", b"another-key-9876543210"


async def _submit(store: Store, n: int) -> None:
    op = operation(n, next_poll_at=at(0))
    await store.create_operation(op, [entry(op, "operation.submitted")])


async def _refused(store: Store, n: int) -> str:
    """Every kind of write is refused; the messages are the same sentence."""
    messages = []
    for write in (
        lambda: _submit(store, n),
        lambda: store.append_audit([entry(operation(n), "note")]),
        lambda: store.claim_due("worker:b", at(1), 5, LEASE),
    ):
        with pytest.raises(StoreError) as refused:
            await write()
        messages.append(str(refused.value))
    assert len(set(messages)) == 1, messages
    return messages[0]


@pytest.mark.parametrize("wrong", [None, OTHER], ids=["no-key", "other-key"])
async def test_a_keyed_ledger_refuses_a_writer_without_its_key(
    ledger_db: LedgerDb, wrong: bytes | None
) -> None:
    """Started with a key, the ledger refuses writes without it or with another, naming
    JOBTRAIL_AUDIT_KEY and not the key; reads still work; the chain verifies with the key,
    and the right key writes on."""
    async with ledger_db.opened(audit_key=KEY) as store:
        await _submit(store, 1)
    async with ledger_db.opened(audit_key=wrong) as store:
        message = await _refused(store, 2)
        assert len(await store.list_operations()) == 1
        assert len(await store.audit_rows()) == 1
    assert "JOBTRAIL_AUDIT_KEY" in message and "keyed" in message
    assert message.count(".") <= 1 and "\n" not in message
    for key in (KEY, OTHER):
        assert key.decode() not in message
    async with ledger_db.opened(audit_key=KEY) as store:
        await _submit(store, 3)
        op = operation(3)
        await store.commit([step(op, at(5), to=State.ACCEPTED)])
        rows = await store.audit_rows()
    assert len(rows) == 3 and verify(rows, KEY).ok


async def test_an_unkeyed_ledger_refuses_a_keyed_writer(ledger_db: LedgerDb) -> None:
    """Started without a key, the chain stays unkeyed: a keyed writer is refused (its links
    would break the chain for every later verification) and told to unset the key."""
    async with ledger_db.opened() as store:
        await _submit(store, 1)
    async with ledger_db.opened(audit_key=KEY) as store:
        message = await _refused(store, 2)
    assert "JOBTRAIL_AUDIT_KEY" in message and "not keyed" in message
    async with ledger_db.opened() as store:
        await _submit(store, 3)
        rows = await store.audit_rows()
    assert verify(rows, None).ok


async def test_two_first_writers_with_different_keys_cannot_both_start_the_chain(
    ledger_db: LedgerDb,
) -> None:
    """Opened together on an empty ledger, the first to write sets the keying; the other,
    though it saw no chain when it opened, is refused at its first write."""
    async with ledger_db.opened(audit_key=KEY) as one, ledger_db.opened(audit_key=OTHER) as two:
        await _submit(one, 1)
        await _refused(two, 2)
        await _submit(one, 3)
        rows = await one.audit_rows()
    assert verify(rows, KEY).ok


async def test_a_key_given_for_a_new_ledger_without_entries_is_not_a_refusal(
    ledger_db: LedgerDb,
) -> None:
    """A ledger whose chain has no entry yet takes whichever keying writes first, and a
    claim (which appends nothing) never fixes it."""
    async with ledger_db.opened(audit_key=KEY) as store:
        assert await store.claim_due("worker:a", at(1), 5, LEASE) == []
    async with ledger_db.opened() as store:
        await _submit(store, 1)
        assert verify(await store.audit_rows(), None).ok


async def _forget_keying(ledger_db: LedgerDb) -> None:
    """Make the ledger look as one begun before migration 0011: no keying row."""
    if ledger_db.kind == "sqlite":
        await ledger_db.raw_execute("DROP TRIGGER audit_keying_no_delete")
    else:
        await ledger_db.raw_execute("DROP TRIGGER audit_keying_fixed ON audit_keying")
    await ledger_db.raw_execute("DELETE FROM audit_keying")


@pytest.mark.parametrize("begun_with", [KEY, None], ids=["keyed", "unkeyed"])
async def test_a_chain_begun_before_the_keying_row_is_told_by_its_head(
    ledger_db: LedgerDb, begun_with: bytes | None
) -> None:
    """A chain with entries and no keying row (an older ledger) is judged by its newest
    entry, which verifies only under the chain's keying: a mismatched writer is refused,
    the right one writes on and the keying row is written for next time."""
    async with ledger_db.opened(audit_key=begun_with) as store:
        await _submit(store, 1)
    await _forget_keying(ledger_db)
    wrong = None if begun_with else KEY
    async with ledger_db.opened(audit_key=wrong) as store:
        await _refused(store, 2)
    async with ledger_db.opened(audit_key=begun_with) as store:
        await _submit(store, 3)
        assert verify(await store.audit_rows(), begun_with).ok
    async with ledger_db.opened(audit_key=OTHER) as store:
        await _refused(store, 4)
