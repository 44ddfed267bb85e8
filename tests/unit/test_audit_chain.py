"""The audit chain: verify names the first entry edited, deleted, inserted or reordered."""

from __future__ import annotations

from dataclasses import replace

import pytest

from jobtrail.core.audit import AuditEntry, AuditRow, link, verify
from jobtrail.store.chain import AuditChain

from factories import T0


def chain(n: int, key: bytes | None = None) -> list[AuditRow]:
    entries = [
        AuditEntry(at=T0, operation_id="op_1", kind="k", actor="a", data={"i": i}) for i in range(n)
    ]
    return [
        AuditRow(seq=s, entry=e, prev_hash=p, hash=h)
        for s, _, e, p, h in AuditChain(key).extend(0, None, entries)
    ]


def test_an_intact_chain_verifies() -> None:
    """A fresh chain is intact and reports its head."""
    verdict = verify(chain(5), None)
    assert verdict.ok and verdict.entries == 5 and verdict.head == chain(5)[-1].hash


def test_edit_is_named() -> None:
    """Changing an entry's content is reported as an edit of that entry."""
    rows = chain(5)
    rows[2] = replace(rows[2], entry=rows[2].entry.replace('"i":2', '"i":9'))
    verdict = verify(rows, None)
    assert not verdict.ok and "#3 was edited" in (verdict.problem or "")


def test_delete_is_named() -> None:
    """A missing entry is reported with its neighbours."""
    rows = chain(5)
    del rows[2]
    assert "deleted between #2 and #4" in (verify(rows, None).problem or "")


def test_insert_is_named() -> None:
    """A foreign entry linked into the middle is reported as inserted."""
    rows = chain(5)
    text = chain(1)[0].entry
    forged = AuditRow(
        seq=99, entry=text, prev_hash=rows[1].hash, hash=link(rows[1].hash, text, None)
    )
    rows.insert(2, forged)
    assert "#99 was inserted" in (verify(rows, None).problem or "")


def test_reorder_is_named() -> None:
    """Two swapped entries are reported as reordered."""
    rows = chain(5)
    rows[1], rows[2] = replace(rows[2], seq=2), replace(rows[1], seq=3)
    assert "reordered" in (verify(rows, None).problem or "")


def test_keyed_chain_needs_the_key() -> None:
    """With an HMAC key, the chain only verifies with that key (forging needs the key)."""
    rows = chain(3, key=b"k1")
    assert verify(rows, b"k1").ok
    assert not verify(rows, b"other").ok
    assert not verify(rows, None).ok


@pytest.mark.parametrize("cut", [1, 2])
def test_anchor_detects_truncation(cut: int) -> None:
    """Entries cut off the end are caught against a saved anchor."""
    rows = chain(5)
    anchor = (5, rows[-1].hash)
    assert verify(rows, None, anchor).ok
    assert not verify(rows[:-cut], None, anchor).ok
