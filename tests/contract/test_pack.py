"""Packing (`prune --pack-after`): a finished operation's rows replaced in place by one
compressed row, read back as before by every reader, bound in the audit chain so that any
edit, removal or insertion of a packed row or a dictionary is named by `audit verify`."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from datetime import timedelta
from functools import partial

import pytest
from retention_records import failed, ledger_at, observing, succeeded, tamper

from jobtrail.core.audit import CHECKPOINT, verify
from jobtrail.core.model import Operation
from jobtrail.core.states import State
from jobtrail.errors import InvalidInput
from jobtrail.ledger import Ledger, packing
from jobtrail.store import Store

from stores import LedgerDb

WEEK = timedelta(days=7)


async def _read(ledger: Ledger, op: Operation) -> tuple[object, ...]:
    """Everything the ledger's readers (explain, history, result, status, the dashboard's
    operation page) read of one operation."""
    op_id = op.operation_id
    found = await ledger.get(op_id)
    return (
        found,
        await ledger.find(op_id),
        await ledger.history(op_id),
        await ledger.attempts(op_id),
        await ledger.observations(op_id),
        await ledger.audit_rows(op_id),
        await ledger.result_problem(found),
        await ledger.submission_problem(found),
    )


async def _old_and_new(store: Store, finished: int = 2) -> tuple[Ledger, list[Operation]]:
    """`finished` operations finished long ago, one running since then, one finished now."""
    ledger, clock = ledger_at(store)
    old = [await (succeeded if n % 2 else failed)(ledger, n) for n in range(1, finished + 1)]
    running = await observing(ledger, 100)
    clock.advance((WEEK + timedelta(days=1)).total_seconds())
    return ledger, [*old, running, await succeeded(ledger, 101)]


async def _verified(ledger: Ledger) -> tuple[bool, list[str], list[str]]:
    rows = await ledger.audit_rows()
    forged = [f.problem for f in await ledger.forged_operations()]
    return verify(rows, None).ok, await ledger.edited_rows(), forged


async def test_packed_operations_read_as_before_and_verify(store: Store) -> None:
    """Only the operations finished before the cut-off are packed; every reader gives the
    same answers for them after packing as before, the others are untouched, their rows
    are gone from the tables, and audit verify (with --replay's checks) passes."""
    ledger, ops = await _old_and_new(store)
    before = [await _read(ledger, op) for op in ops]
    batches = await ledger.pack(WEEK, actor="ops:ana")
    packed = [p.operation.operation_id for b in batches for p in b.operations]
    assert packed == sorted(op.operation_id for op in ops[:2])
    assert [await _read(ledger, op) for op in ops] == before
    for op_id in packed:
        assert await store.get(op_id) is None and await store.history(op_id) == []
        assert await store.audit_rows(op_id) == []
    assert len(await store.packed()) == 2
    checkpoint = (await store.audit_rows())[-1]
    assert json.loads(checkpoint.entry)["kind"] == CHECKPOINT
    assert await _verified(ledger) == (True, [], [])
    assert await ledger.pack(WEEK, actor="ops:ana") == []  # nothing left to pack


async def test_packing_goes_in_batches_each_with_its_checkpoint(store: Store) -> None:
    """With a batch of 2, five finished operations are packed in three transactions, each
    with its own checkpoint; the chain verifies across all of them."""
    ledger, ops = await _old_and_new(store, finished=5)
    seen: list[int] = []
    batches = await ledger.pack(WEEK, actor="cron", batch=2, after_batch=lambda b: seen.append(1))
    assert [len(b.operations) for b in batches] == [2, 2, 1] and len(seen) == 3
    assert len({b.checkpoint.seq for b in batches if b.checkpoint}) == 3
    assert await _verified(ledger) == (True, [], [])
    assert (await ledger.get(ops[4].operation_id)).state is State.SUCCEEDED


async def test_an_operation_with_a_notice_due_is_not_packed(ledger_db: LedgerDb) -> None:
    """A finished operation with a notice to a person still due stays unpacked."""
    async with ledger_db.opened() as store:
        ledger, ops = await _old_and_new(store)
        await ledger_db.raw_execute(
            "INSERT INTO notices (event_id, type, operation_id, created_at, document, due_at) "
            f"VALUES ('ev1', 'operation.failed', '{ops[1].operation_id}', "
            "'2025-03-01T12:00:00.000000Z', '{}', '2025-03-01T12:00:00.000000Z')"
        )
        batches = await ledger.pack(WEEK, actor="ops:ana")
        assert [p.operation.operation_id for b in batches for p in b.operations] == [
            ops[0].operation_id
        ]
        assert await store.get(ops[1].operation_id) is not None


async def test_a_dictionary_is_trained_on_the_ledger_and_stored_in_it(store: Store) -> None:
    """With enough finished operations in a batch, a dictionary is trained on them, stored
    in the ledger, bound by the checkpoint, and used to read them back."""
    ledger, ops = await _old_and_new(store, finished=10)
    before = [await _read(ledger, op) for op in ops]
    await _pack_with_dictionary(ledger)
    dictionaries = await store.pack_dictionaries()
    assert list(dictionaries) == [1] and dictionaries[1].data
    assert {dictionary for _, dictionary, _ in await store.packed()} == {1}
    assert [await _read(ledger, op) for op in ops] == before
    assert await _verified(ledger) == (True, [], [])


async def _pack_with_dictionary(ledger: Ledger) -> None:
    seal = partial(packing.seal, train_at=8)  # the tests' ledgers are small
    now = ledger.now()
    await ledger.store.pack(now - WEEK, now, "ops:ana", seal, 500)


def _blob(db: LedgerDb, data: bytes) -> str:
    return f"X'{data.hex()}'" if db.kind == "sqlite" else f"'\\x{data.hex()}'::bytea"


async def _problems(ledger: Ledger) -> str:
    ok, edited, forged = await _verified(ledger)
    assert not ok or edited or forged
    return " ".join(edited)


async def _packed_ledger(store: Store) -> tuple[Ledger, list[Operation]]:
    ledger, ops = await _old_and_new(store, finished=10)
    await _pack_with_dictionary(ledger)
    assert await _verified(ledger) == (True, [], [])
    return ledger, ops


@pytest.mark.parametrize("what", ["state", "attempt", "audit entry"])
async def test_a_packed_operation_rewritten_and_recompressed_is_named(
    ledger_db: LedgerDb, what: str
) -> None:
    """The tampers the tests know, done to a packed operation: its state forged, an
    attempt's answer edited, an audit entry edited — unpacked, changed, compressed again
    with the same dictionary and written back — are named by audit verify."""
    async with ledger_db.opened() as store:
        ledger, ops = await _packed_ledger(store)
        op_id = ops[0].operation_id
        ((_, dictionary_id, data),) = await store.packed(op_id)
        dictionary = (await store.pack_dictionaries())[1]
        item = packing.unpack(data, dictionary)
        lines = packing.encode(item)
        index = next(i for i, line in enumerate(lines) if _kind(line) == _KINDS[what])
        record = json.loads(lines[index])
        if what == "state":
            record["state"] = "failed"
        elif what == "attempt":
            record["detail"] = '{"n": 2}'
        else:
            record["entry"] = record["entry"].replace("agent:test", "mallory")
        lines[index] = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        forged = _recompress("\n".join(lines).encode(), dictionary.data)
        await tamper(
            ledger_db,
            "packed_operations",
            f"UPDATE packed_operations SET data = {_blob(ledger_db, forged)} "
            f"WHERE operation_id = '{op_id}'",
        )
        problems = await _problems(ledger)
    assert f"the packed row of operation {op_id} was edited" in problems
    assert dictionary_id == 1


_KINDS = {"state": "operation", "attempt": "attempt", "audit entry": "audit"}


def _kind(line: str) -> str:
    return str(json.loads(line)["type"])


def _recompress(text: bytes, dictionary: bytes) -> bytes:
    import zstandard

    options = zstandard.ZstdCompressionDict(dictionary)
    return bytes(zstandard.ZstdCompressor(level=packing.LEVEL, dict_data=options).compress(text))


async def test_a_packed_row_swapped_removed_or_inserted_is_named(ledger_db: LedgerDb) -> None:
    """Another operation's packed bytes copied over one's, a packed row deleted, and a
    packed row inserted under a new id are each named."""
    async with ledger_db.opened() as store:
        ledger, ops = await _packed_ledger(store)
        one, two, three = (op.operation_id for op in ops[:3])
        await tamper(
            ledger_db,
            "packed_operations",
            f"UPDATE packed_operations SET data = (SELECT data FROM packed_operations "
            f"WHERE operation_id = '{two}') WHERE operation_id = '{one}'",
            f"DELETE FROM packed_operations WHERE operation_id = '{three}'",
            "INSERT INTO packed_operations SELECT 'op_planted', dictionary_id, data "
            f"FROM packed_operations WHERE operation_id = '{two}'",
        )
        problems = await _problems(ledger)
    assert f"the packed row of operation {one} was edited" in problems
    assert f"packed operation {three}, bound by checkpoint" in problems
    assert "packed operation op_planted is bound by no packing checkpoint" in problems


async def test_an_edited_or_removed_dictionary_is_named(ledger_db: LedgerDb) -> None:
    """Editing the stored dictionary is named (every operation packed with it is named with
    it), and so is removing it."""
    async with ledger_db.opened() as store:
        ledger, _ = await _packed_ledger(store)
        other = (await store.pack_dictionaries())[1].data[::-1]
        await tamper(
            ledger_db,
            "pack_dictionaries",
            f"UPDATE pack_dictionaries SET data = {_blob(ledger_db, other)}",
        )
        assert "pack dictionary 1 was edited" in await _problems(ledger)
        await tamper(
            ledger_db,
            "pack_dictionaries",
            "UPDATE packed_operations SET dictionary_id = NULL",
            "DELETE FROM pack_dictionaries",
        )
        assert "it names dictionary None, checkpoint" in await _problems(ledger)


async def test_an_edited_packing_checkpoint_breaks_the_chain(ledger_db: LedgerDb) -> None:
    """Rewriting the checkpoint's binding to match forged packed bytes breaks its hash."""
    async with ledger_db.opened() as store:
        ledger, _ = await _old_and_new(store)
        (batch,) = await ledger.pack(WEEK, actor="ops:ana")
        assert batch.checkpoint is not None
        seq = batch.checkpoint.seq
        await tamper(
            ledger_db,
            "audit_log",
            f"UPDATE audit_log SET entry = replace(entry, 'ops:ana', 'mallory') WHERE seq = {seq}",
        )
        rows = await store.audit_rows()
    assert f"entry #{seq} was edited" in (verify(rows, None).problem or "")


_PACK_AND_DIE = """
import asyncio, os, signal, sys
from datetime import timedelta
from jobtrail.ledger import Ledger
from jobtrail.store import open_store

def die(_):
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)

async def main():
    store = await open_store(sys.argv[1])
    await Ledger(store).pack(timedelta(days=7), actor="cron", batch=1, after_batch=die)

asyncio.run(main())
"""


async def test_a_crash_between_batches_loses_nothing(ledger_db: LedgerDb) -> None:
    """A packing process SIGKILLed right after its first batch committed leaves that batch
    packed and every other operation as it was; the chain verifies, and the next packing
    finishes the job."""
    async with ledger_db.opened() as store:
        ledger, ops = await _old_and_new(store, finished=3)
        before = [await _read(ledger, op) for op in ops]
    done = subprocess.run(
        [sys.executable, "-c", _PACK_AND_DIE, ledger_db.url], capture_output=True, timeout=120
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    async with ledger_db.opened() as store:
        ledger = Ledger(store)  # the machine's clock: the operations finished long ago
        first = min(op.operation_id for op in ops[:3])  # packed in the order of their ids
        assert [op_id for op_id, _, _ in await store.packed()] == [first]
        unpacked = [op.operation_id for op in ops if await store.get(op.operation_id)]
        assert sorted(unpacked) == sorted(op.operation_id for op in ops if op.operation_id != first)
        assert await _verified(ledger) == (True, [], [])
        assert [await _read(ledger, op) for op in ops] == before
        await ledger.pack(WEEK, actor="cron")
        assert len(await store.packed()) == 4  # by the machine's clock, the recent one too
        assert [await _read(ledger, op) for op in ops] == before
        assert await _verified(ledger) == (True, [], [])


def test_packing_without_zstandard_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without python-zstandard, packing says which extra to install."""
    monkeypatch.setitem(sys.modules, "zstandard", None)
    with pytest.raises(InvalidInput, match=r"pip install 'jobtrail\[pack\]'"):
        packing.require()


async def test_tampers_made_before_packing_are_still_caught(ledger_db: LedgerDb) -> None:
    """An audit entry edited and a finished operation's state forged before packing are
    sealed into the packed rows as they were; audit verify still names the edited entry and
    --replay's check the forged state, read from the packed rows."""
    async with ledger_db.opened() as store:
        ledger, ops = await _old_and_new(store)
        done, refused = ops[0].operation_id, ops[1].operation_id
        seq = (await store.audit_rows(done))[0].seq  # its submission, by agent:test
        await tamper(
            ledger_db,
            "audit_log",
            "UPDATE audit_log SET entry = replace(entry, 'agent:test', 'mallory') "
            f"WHERE seq = {seq}",
        )
        assert f"entry #{seq} was edited" in (verify(await store.audit_rows(), None).problem or "")
        await tamper(
            ledger_db,
            "operations",
            f"UPDATE operations SET state = 'succeeded' WHERE operation_id = '{refused}'",
        )
        await ledger.pack(WEEK, actor="ops:ana")
        assert await store.get(done) is None and await store.get(refused) is None
        edited = await ledger.edited_rows()
        forged = await ledger.forged_operations()
    assert f"packed entry #{seq} was edited" in " ".join(edited)
    # (the operation whose submission entry was edited is named too: its request no longer
    # matches the audited one)
    assert refused in [f.operation_id for f in forged]
    assert "(forged state)" in next(f.problem for f in forged if f.operation_id == refused)
