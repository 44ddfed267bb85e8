"""The audit walk across pruned entries: a checkpoint bridges exactly the runs it names."""

from __future__ import annotations

from jobtrail.core.audit import CHECKPOINT, AuditEntry, AuditRow, cuts_of, verify
from jobtrail.store.chain import AuditChain

from factories import T0


def _rows(entries: list[AuditEntry], after: list[AuditRow] | None = None) -> list[AuditRow]:
    head = after[-1] if after else None
    extended = AuditChain(None).extend(
        head.seq if head else 0, head.hash if head else None, entries
    )
    return [AuditRow(seq=s, entry=e, prev_hash=p, hash=h) for s, _, e, p, h in extended]


def _entry(i: int) -> AuditEntry:
    return AuditEntry(at=T0, operation_id=f"op_{i % 2}", kind="k", actor="a", data={"i": i})


def _prune(
    rows: list[AuditRow], removed: set[int], cuts: list[dict[str, object]] | None = None
) -> list[AuditRow]:
    """Remove `removed` and append a checkpoint naming them (or the given cuts)."""
    named = cuts if cuts is not None else [c.doc() for c in cuts_of(rows, removed)]
    checkpoint = AuditEntry(
        at=T0, operation_id=None, kind=CHECKPOINT, actor="ops", data={"cuts": named}
    )
    kept = [r for r in rows if r.seq not in removed]
    return kept + _rows([checkpoint], rows)


def test_two_checkpoints_bridge_adjacent_gaps() -> None:
    """Entries removed by two prunes, side by side in the chain, are walked across."""
    rows = _rows([_entry(i) for i in range(8)])
    once = _prune(rows, {2, 4})
    assert verify(once, None).ok
    more = _rows([_entry(9)], once)
    twice = _prune(once + more, {3, 5})
    assert verify(twice, None).ok, verify(twice, None).problem


def test_a_checkpoint_does_not_cover_more_than_it_names() -> None:
    """An entry deleted next to a pruned run, but not named by the checkpoint, is reported."""
    rows = _rows([_entry(i) for i in range(8)])
    pruned = _prune(rows, {3, 4})
    tampered = [r for r in pruned if r.seq != 5]
    problem = verify(tampered, None).problem or ""
    assert "deleted between #2 and #6" in problem


def test_a_checkpoint_with_a_wrong_hash_bridges_nothing() -> None:
    """A cut whose recorded hashes do not match the chain around it is no bridge."""
    rows = _rows([_entry(i) for i in range(6)])
    bogus = [{"first": 3, "last": 3, "prev": rows[1].hash, "hash": "f" * 64}]
    assert "deleted" in (verify(_prune(rows, {3}, bogus), None).problem or "")


def test_an_anchor_at_the_end_of_a_pruned_run_still_checks() -> None:
    """An anchor whose entry was pruned is matched against the hash its checkpoint kept, and
    a wrong one is still refused."""
    rows = _rows([_entry(i) for i in range(5)])
    pruned = _prune(rows, {4, 5})
    assert verify(pruned, None, (5, rows[-1].hash)).ok
    assert not verify(pruned, None, (5, "e" * 64)).ok
    problem = verify(pruned, None, (4, rows[3].hash)).problem or ""
    assert "was pruned" in problem
