"""The tamper-evident audit log: entries chained by hash, keyed with HMAC when a key is set.

    hash_n = H(hash_{n-1} + canonical(entry_n))   with H = sha256, or HMAC-SHA256(key)

The chain, not the row numbers, defines the order: rows are numbered for reading, but a
renumbered row is still caught by its links. `verify` walks the chain and names the first
entry that was edited, deleted, inserted or moved. Cutting entries off the end leaves a
shorter valid chain; `head` gives a (count, hash) anchor to keep elsewhere and check later.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

GENESIS = "0" * 64
_ENCODE = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
).encode


@dataclass(frozen=True, kw_only=True)
class AuditEntry:
    """One fact for the audit log. `data` must already be sanitized."""

    at: datetime
    operation_id: str | None
    kind: str
    actor: str
    data: Any

    def canonical(self) -> str:
        """The entry's one textual form: sorted keys, no whitespace. What is hashed is this
        text, as stored, so verifying never depends on encoding the entry again."""
        return _ENCODE(
            {
                "at": self.at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                "operation_id": self.operation_id,
                "kind": self.kind,
                "actor": self.actor,
                "data": self.data,
            }
        )


@dataclass(frozen=True, kw_only=True)
class AuditRow:
    seq: int
    entry: str  # canonical JSON text of the entry
    prev_hash: str
    hash: str


def link(prev_hash: str, entry: str, key: bytes | None) -> str:
    data = (prev_hash + entry).encode("utf-8")
    if key:
        return hmac.new(key, data, hashlib.sha256).hexdigest()
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, kw_only=True)
class Verdict:
    ok: bool
    entries: int
    head: str
    problem: str | None = None
    seq: int | None = None

    def message(self) -> str:
        if self.ok:
            return f"audit log intact: {self.entries} entries, head {self.head[:16]}…"
        return f"audit log tampered: {self.problem}"


def verify(
    rows: Iterable[AuditRow], key: bytes | None, anchor: tuple[int, str] | None = None
) -> Verdict:
    """Walk the chain in row order; report the first break and what kind of break it is."""
    listed = list(rows)
    by_hash = {row.hash: i for i, row in enumerate(listed)}
    expected_prev = GENESIS
    for i, row in enumerate(listed):
        if link(row.prev_hash, row.entry, key) != row.hash:
            return _broken(
                i, row, f"entry #{row.seq} was edited (its content no longer matches its hash)"
            )
        if row.prev_hash != expected_prev:
            return _broken(i, row, _diagnose(listed, i, expected_prev, by_hash))
        expected_prev = row.hash
    if anchor is not None:
        count, head = anchor
        if len(listed) < count or (len(listed) >= count and listed[count - 1].hash != head):
            return Verdict(
                ok=False,
                entries=len(listed),
                head=expected_prev,
                problem=f"the log no longer matches the anchor ({count} entries, head "
                f"{head[:16]}…): entries after #{min(count, len(listed))} were cut or rewritten",
                seq=None,
            )
    return Verdict(ok=True, entries=len(listed), head=expected_prev)


def _diagnose(rows: list[AuditRow], i: int, expected_prev: str, by_hash: dict[str, int]) -> str:
    """Row i does not link to the row before it: say what most likely happened."""
    row = rows[i]
    copied = next((r for r in rows[:i] if r.hash == row.hash), None)
    if copied is not None:
        return f"entry #{row.seq} was inserted (a copy of #{copied.seq})"
    referenced = {r.prev_hash for r in rows}
    k = by_hash.get(row.prev_hash)
    if k is not None and k < i - 1:
        if all(r.hash not in referenced for r in rows[k + 1 : i]):
            return f"entry #{rows[k + 1].seq} was inserted (nothing in the chain links to it)"
        return f"entry #{row.seq} was reordered (it links to #{rows[k].seq})"
    if k is not None:
        return f"entry #{row.seq} was reordered (it links to #{rows[k].seq}, which comes later)"
    if any(r.prev_hash == expected_prev for r in rows[i + 1 :]):
        if row.hash in referenced:
            return f"entry #{row.seq} was reordered (it is out of its place)"
        return f"entry #{row.seq} was inserted (nothing in the chain links to it)"
    if i == 0:
        return f"entries before #{row.seq} were deleted"
    before = rows[i - 1]
    if row.seq != before.seq + 1:
        return f"an entry was deleted between #{before.seq} and #{row.seq}"
    return f"entry #{before.seq} was rewritten (re-hashed: #{row.seq} no longer links to it)"


def _broken(i: int, row: AuditRow, problem: str) -> Verdict:
    return Verdict(ok=False, entries=i, head="", problem=problem, seq=row.seq)
