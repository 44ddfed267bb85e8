"""`audit verify` against raw SQL tampering: relabelled columns, deleted-and-renumbered and
moved entries are named correctly, and forged operation records are found by replay."""

from __future__ import annotations

from retention_records import failed, ledger_at, observing, succeeded, tamper

from jobtrail.core.audit import verify
from jobtrail.core.model import Operation
from jobtrail.ledger import Ledger

from stores import LedgerDb


async def _three(ledger: Ledger) -> tuple[Operation, Operation, Operation]:
    return await succeeded(ledger, 1), await failed(ledger, 2), await observing(ledger, 3)


async def test_a_relabelled_operation_id_column_is_named(ledger_db: LedgerDb) -> None:
    """An audit row whose operation_id column is changed (its entry left alone) is reported
    as relabelled, by seq, though its hash still matches."""
    async with ledger_db.opened() as store:
        ledger, _ = ledger_at(store)
        one, two, _ = await _three(ledger)
        seq = (await store.audit_rows(two.operation_id))[1].seq
        assert verify(await store.audit_rows(), None).ok
        await tamper(
            ledger_db,
            "audit_log",
            f"UPDATE audit_log SET operation_id = '{one.operation_id}' WHERE seq = {seq}",
        )
        verdict = verify(await store.audit_rows(), None)
    assert not verdict.ok and verdict.seq == seq
    assert f"entry #{seq} was relabelled: its operation_id column" in (verdict.problem or "")


async def test_a_deleted_and_renumbered_entry_is_named(ledger_db: LedgerDb) -> None:
    """Deleting entry #3 and renumbering the rest to close the gap names #3 as deleted."""
    async with ledger_db.opened() as store:
        ledger, _ = ledger_at(store)
        await _three(ledger)
        await tamper(
            ledger_db,
            "audit_log",
            "DELETE FROM audit_log WHERE seq = 3",
            "UPDATE audit_log SET seq = seq + 1000 WHERE seq > 3",
            "UPDATE audit_log SET seq = seq - 1001 WHERE seq > 1000",
        )
        rows = await store.audit_rows()
    assert [r.seq for r in rows] == list(range(1, len(rows) + 1))
    problem = verify(rows, None).problem or ""
    assert problem.startswith("entry #3 was deleted"), problem


async def test_a_moved_entry_is_named(ledger_db: LedgerDb) -> None:
    """Entry #2 moved to the end of the log is the entry named as moved, with its place."""
    async with ledger_db.opened() as store:
        ledger, _ = ledger_at(store)
        await _three(ledger)
        last = len(await store.audit_rows())
        await tamper(ledger_db, "audit_log", f"UPDATE audit_log SET seq = {last + 1} WHERE seq = 2")
        verdict = verify(await store.audit_rows(), None)
    assert f"entry #{last + 1} was moved (reordered: it belongs after #1)" == verdict.problem


async def test_an_intact_ledger_has_no_forged_operation(ledger_db: LedgerDb) -> None:
    """Every operation driven by the ledger replays to its stored state and remote job id."""
    async with ledger_db.opened() as store:
        ledger, _ = ledger_at(store)
        await _three(ledger)
        assert await ledger.forged_operations() == []


async def test_a_forged_state_and_remote_job_id_are_named(ledger_db: LedgerDb) -> None:
    """An UPDATE that sets another state, or another remote job id, on the operations table
    is found by replaying each history, and only those operations are named."""
    async with ledger_db.opened() as store:
        ledger, _ = ledger_at(store)
        _, two, three = await _three(ledger)
        await ledger_db.raw_execute(
            f"UPDATE operations SET state = 'succeeded' WHERE operation_id = '{two.operation_id}'"
        )
        await ledger_db.raw_execute(
            "UPDATE operations SET remote_job_id = 'job_evil' "
            f"WHERE operation_id = '{three.operation_id}'"
        )
        forged = {f.operation_id: f.problem for f in await ledger.forged_operations()}
    assert set(forged) == {two.operation_id, three.operation_id}
    assert "stored state is succeeded but its history ends in failed" in forged[two.operation_id]
    assert (
        "'job_evil'" in forged[three.operation_id]
        and "forged remote job id" in (forged[three.operation_id])
    )


async def test_a_forged_step_inserted_into_history_is_named(ledger_db: LedgerDb) -> None:
    """A transition row inserted by hand (with the state updated to match, so the replay
    itself agrees) is named: no audited entry vouches for it."""
    async with ledger_db.opened() as store:
        ledger, _ = ledger_at(store)
        _, _, three = await _three(ledger)
        op_id = three.operation_id
        await ledger_db.raw_execute(
            "INSERT INTO transitions (operation_id, at, actor, from_state, to_state, evidence, "
            f"cause, remote_job_id) VALUES ('{op_id}', '2025-03-01T13:00:00.000000Z', "
            f"'worker:a', '{three.state}', 'failed', 'observed_failed', 'x', 'job_3')"
        )
        await ledger_db.raw_execute(
            f"UPDATE operations SET state = 'failed' WHERE operation_id = '{op_id}'"
        )
        forged = await ledger.forged_operations()
    assert [f.operation_id for f in forged] == [op_id]
    assert "is not in the audit log" in forged[0].problem
