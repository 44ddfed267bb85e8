"""Retention: `prune` moves finished operations out with everything they own, leaves a
checkpoint that keeps the audit chain provable, and is the only way rows leave."""

from __future__ import annotations

import gzip
import json
from datetime import timedelta
from pathlib import Path

import pytest
from retention_records import failed, ledger_at, observing, succeeded, tamper

from jobtrail.core.audit import CHECKPOINT, verify
from jobtrail.core.model import Operation
from jobtrail.ledger import Ledger, archive
from jobtrail.store import Store
from jobtrail.store.retention import Pruned

from stores import RAW_ERRORS, LedgerDb

MONTH = timedelta(days=30)


async def _snapshot(store: Store, op: Operation) -> tuple[object, ...]:
    op_id = op.operation_id
    return (
        await store.get(op_id),
        await store.history(op_id),
        await store.attempts(op_id),
        await store.observations(op_id),
        await store.leases(op_id),
        await store.audit_rows(op_id),
    )


async def _ledger_with_old_and_new(store: Store) -> tuple[Ledger, list[Operation]]:
    """Two operations finished long ago, one still running since then, one finished now."""
    ledger, clock = ledger_at(store)
    old = [await succeeded(ledger, 1), await failed(ledger, 2), await observing(ledger, 3)]
    clock.advance((MONTH + timedelta(days=1)).total_seconds())
    return ledger, [*old, await succeeded(ledger, 4)]


async def test_prune_moves_out_finished_operations_and_keeps_the_rest(store: Store) -> None:
    """Only operations finished before the cut-off leave, with their history, attempts,
    observations, leases and audit entries; the rest is untouched, the chain still verifies
    and every remaining operation still replays."""
    ledger, (done, refused, running, recent) = await _ledger_with_old_and_new(store)
    before = {op.operation_id: await _snapshot(store, op) for op in (done, refused)}
    kept_before = [await _snapshot(store, op) for op in (running, recent)]
    kept: list[Pruned] = []
    pruned = await ledger.prune(MONTH, actor="ops:ana", keep=kept.append)
    assert kept == [pruned]
    assert [p.operation.operation_id for p in pruned.operations] == sorted(before)
    for item in pruned.operations:
        op_id = item.operation.operation_id
        assert (
            item.operation,
            list(item.history),
            list(item.attempts),
            list(item.observations),
            list(item.leases),
            list(item.audit),
        ) == before[op_id]
        assert item.history and item.attempts and item.leases and item.audit
        assert await _snapshot(store, item.operation) == (None, [], [], [], [], [])
    assert [await _snapshot(store, op) for op in (running, recent)] == kept_before
    rows = await store.audit_rows()
    assert json.loads(rows[-1].entry)["kind"] == CHECKPOINT and pruned.checkpoint == rows[-1]
    assert verify(rows, None).ok
    assert await ledger.forged_operations() == []


async def test_nothing_finished_before_the_cut_off_changes_nothing(store: Store) -> None:
    """A prune with nothing to remove appends no checkpoint and removes nothing."""
    ledger, _ = ledger_at(store)
    await succeeded(ledger, 1)
    rows = await store.audit_rows()
    pruned = await ledger.prune(MONTH, actor="ops:ana", keep=lambda _: None)
    assert pruned.operations == [] and pruned.checkpoint is None
    assert await store.audit_rows() == rows


async def test_a_failing_archive_removes_nothing(store: Store) -> None:
    """When `keep` (the archive writer) fails, the prune rolls back entirely."""
    ledger, ops = await _ledger_with_old_and_new(store)
    before = [await _snapshot(store, op) for op in ops]
    rows = await store.audit_rows()

    def broken(_: Pruned) -> None:
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        await ledger.prune(MONTH, actor="ops:ana", keep=broken)
    assert [await _snapshot(store, op) for op in ops] == before
    assert await store.audit_rows() == rows


async def test_repeated_prunes_keep_the_chain_provable(store: Store) -> None:
    """Prunes at different times leave gaps next to each other; each checkpoint bridges its
    own, and the chain verifies after each one."""
    ledger, clock = ledger_at(store)
    for n in range(1, 7):
        await (succeeded if n % 2 else failed)(ledger, n)
        await observing(ledger, 10 + n)
        clock.advance(timedelta(days=10).total_seconds())
        pruned = await ledger.prune(timedelta(days=15), actor="cron", keep=lambda _: None)
        assert verify(await store.audit_rows(), None).ok
        assert len(pruned.operations) == (1 if n > 1 else 0)


async def test_a_deletion_outside_prune_is_still_detected(ledger_db: LedgerDb) -> None:
    """After a prune, deleting a remaining entry, or the checkpoint itself, is reported as
    a deletion: the checkpoint vouches only for the entries it names."""
    async with ledger_db.opened() as store:
        ledger, (_, _, running, _) = await _ledger_with_old_and_new(store)
        pruned = await ledger.prune(MONTH, actor="ops:ana", keep=lambda _: None)
        assert pruned.checkpoint is not None
        victim = (await store.audit_rows(running.operation_id))[-1].seq
        await tamper(ledger_db, "audit_log", f"DELETE FROM audit_log WHERE seq = {victim}")
        problem = verify(await store.audit_rows(), None).problem or ""
        assert "was deleted between" in problem and f"and #{victim + 1}" in problem
        await tamper(
            ledger_db, "audit_log", f"DELETE FROM audit_log WHERE seq = {pruned.checkpoint.seq}"
        )
        rows = await store.audit_rows()
    assert not verify(rows, None).ok


@pytest.mark.parametrize(
    "table", ["audit_log", "transitions", "observations", "attempts", "leases", "operations"]
)
async def test_a_delete_without_authorization_is_refused(ledger_db: LedgerDb, table: str) -> None:
    """The database refuses deleting a finished operation's rows outside prune, and an
    authorization written by hand does not let an unfinished operation's rows go."""
    async with ledger_db.opened() as store:
        _, (done, _, running, _) = await _ledger_with_old_and_new(store)
        before = [await _snapshot(store, op) for op in (done, running)]
        with pytest.raises(RAW_ERRORS, match="prune"):
            await ledger_db.raw_execute(
                f"DELETE FROM {table} WHERE operation_id = '{done.operation_id}'"
            )
        await ledger_db.raw_execute(
            f"INSERT INTO prune_authorizations VALUES ('{running.operation_id}')"
        )
        with pytest.raises(RAW_ERRORS, match="prune"):
            await ledger_db.raw_execute(
                f"DELETE FROM {table} WHERE operation_id = '{running.operation_id}'"
            )
        assert [await _snapshot(store, op) for op in (done, running)] == before


async def test_the_archive_holds_every_record_and_verifies(store: Store, tmp_path: Path) -> None:
    """The archive is gzip JSON Lines with a versioned header; read back, it gives the same
    records, and its audit slice checks out against its checkpoint (and not once edited)."""
    ledger, _ = await _ledger_with_old_and_new(store)
    path = tmp_path / "old.jsonl.gz"
    pruned = await ledger.prune(MONTH, actor="ops:ana", keep=lambda p: archive.write(path, p))
    assert path.stat().st_mode & 0o777 == 0o600
    with gzip.open(path, "rt") as lines:
        records = [json.loads(line) for line in lines]
    assert records[0] == records[0] | {"type": "header", "format": "jobtrail-archive", "version": 1}
    assert {r["type"] for r in records} >= {"checkpoint", "operation", "transition", "audit"}
    found = archive.read(path)
    assert found.checkpoint == pruned.checkpoint
    for item in pruned.operations:
        again = found.get(item.operation.operation_id)
        assert again.operation == item.operation
        assert list(again.history) == list(item.history)
        assert list(again.attempts) == list(item.attempts)
        assert list(again.observations) == list(item.observations)
        assert list(again.leases) == list(item.leases)
        assert list(again.audit) == list(item.audit)
    assert archive.verify_archive(found, None) == []
    edited = [
        r if r.get("type") != "audit" else r | {"entry": r["entry"].replace("agent", "mallory")}
        for r in records
    ]
    forged = tmp_path / "forged.jsonl.gz"
    with gzip.open(forged, "wt") as out:
        out.writelines(json.dumps(r) + "\n" for r in edited)
    assert "was edited" in " ".join(archive.verify_archive(archive.read(forged), None))


async def test_every_archived_line_is_bound_by_the_checkpoint(store: Store, tmp_path: Path) -> None:
    """Pruned with the archive's binding, the checkpoint in the chain holds the header's
    digest and each operation's; the intact archive verifies, and a forged transition
    line is named by its line number (issue 19: only the audit lines used to be checked)."""
    ledger, _ = await _ledger_with_old_and_new(store)
    path = tmp_path / "old.jsonl.gz"
    pruned = await ledger.prune(
        MONTH, actor="ops:ana", keep=lambda p: archive.write(path, p), bind=archive.binding
    )
    assert pruned.checkpoint is not None
    bound = json.loads(pruned.checkpoint.entry)["data"]["archive"]
    assert set(bound["operations"]) == {p.operation.operation_id for p in pruned.operations}
    assert archive.verify_archive(archive.read(path), None) == []
    with gzip.open(path, "rt") as lines:
        texts = [line.rstrip("\n") for line in lines]
    number = next(n for n, t in enumerate(texts, 1) if json.loads(t)["type"] == "transition")
    record = json.loads(texts[number - 1]) | {"cause": "forged by hand"}
    texts[number - 1] = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    forged = tmp_path / "forged.jsonl.gz"
    with gzip.open(forged, "wt") as out:
        out.writelines(text + "\n" for text in texts)
    problems = archive.verify_archive(archive.read(forged), None)
    assert any(p.startswith(f"archive line {number} (a transition line") for p in problems), (
        problems
    )
