"""The tamper-evident audit log: entries chained by hash, keyed with HMAC when a key is set.

    hash_n = H(hash_{n-1} + canonical(entry_n))   with H = sha256, or HMAC-SHA256(key)

The chain, not the row numbers, defines the order: rows are numbered for reading, but a
renumbered row is still caught by its links. `verify` walks the chain and names the first
entry that was edited, deleted, inserted or moved, and the first row whose indexed columns
(copies of entry fields, kept for lookups) disagree with its hashed entry. Cutting entries
off the end leaves a shorter valid chain; `head` gives a (count, hash) anchor to keep
elsewhere and check later.

Rows leave the log only through `prune`, which appends a checkpoint entry naming each run of
removed entries with the hash before it and the hash of its last entry: the walk re-anchors
across exactly those gaps, and any other missing entry is still reported as deleted.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

GENESIS = "0" * 64
CHECKPOINT = "audit.checkpoint"  # the kind of the entry `prune` leaves in the chain
_TIME = "%Y-%m-%dT%H:%M:%S.%fZ"
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
                "at": self.at.strftime(_TIME),
                "operation_id": self.operation_id,
                "kind": self.kind,
                "actor": self.actor,
                "data": self.data,
            }
        )


def hex_of(value: Any) -> Any:
    """A stored hash as the chain links it, 64 hex characters: entries from migration 0017 on
    store their hashes as 32 raw bytes, older ones as hex text (None stays None)."""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    return value


def stored_hash(value: str) -> bytes:
    """A hash as stored from migration 0017 on: its 32 raw bytes."""
    return bytes.fromhex(value)


@dataclass(frozen=True, kw_only=True)
class AuditRow:
    seq: int
    entry: str  # canonical JSON text of the entry
    prev_hash: str
    hash: str
    # The row's other columns (copies of entry fields kept for lookups, e.g. operation_id):
    # verify checks each against the hashed entry, since readers select by them.
    columns: Mapping[str, Any] = field(default_factory=dict)


AUDIT_ROW_FIELDS = ("seq", "entry", "prev_hash", "hash")


def audit_row(row: Any) -> AuditRow:
    """An AuditRow from a database row (a dict, or a sqlite3.Row, which iterates over values
    rather than keys) with any columns: the extra ones go to `columns`."""
    return AuditRow(
        seq=row["seq"],
        entry=row["entry"],
        prev_hash=hex_of(row["prev_hash"]),
        hash=hex_of(row["hash"]),
        columns={k: row[k] for k in row.keys() if k not in AUDIT_ROW_FIELDS},  # noqa: SIM118
    )


@dataclass(frozen=True, kw_only=True)
class Cut:
    """A run of entries removed by `prune`: seqs first..last, the hash the run's first entry
    linked to, and the hash of its last entry (what the next remaining entry links to)."""

    first: int
    last: int
    prev: str
    hash: str

    def doc(self) -> dict[str, Any]:
        return {"first": self.first, "last": self.last, "prev": self.prev, "hash": self.hash}


def cuts_of(rows: Iterable[AuditRow], removed: set[int]) -> list[Cut]:
    """The maximal runs of consecutive `removed` seqs among `rows` (which hold them all)."""
    runs: list[Cut] = []
    for row in rows:
        if row.seq not in removed:
            continue
        last = runs[-1] if runs else None
        if last is not None and last.last == row.seq - 1:
            runs[-1] = Cut(first=last.first, last=row.seq, prev=last.prev, hash=row.hash)
        else:
            runs.append(Cut(first=row.seq, last=row.seq, prev=row.prev_hash, hash=row.hash))
    return runs


def digest(value: Any) -> str:
    """The sha256 (hex) of a value's canonical JSON: what an entry holds of a row's column it
    binds instead of copying it (migration 0017)."""
    return hashlib.sha256(_ENCODE(value).encode("utf-8")).hexdigest()


def link(prev_hash: str, entry: str, key: bytes | None) -> str:
    data = (prev_hash + entry).encode("utf-8")
    if key:
        return hmac.new(key, data, hashlib.sha256).hexdigest()
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, kw_only=True)
class ChainReport:
    ok: bool
    entries: int
    head: str
    problem: str | None = None
    seq: int | None = None
    pruned: int = 0  # entries removed by prune, walked across under their checkpoints

    def message(self) -> str:
        if self.ok:
            after = f" ({self.pruned} more pruned under checkpoints)" if self.pruned else ""
            return f"audit log intact: {self.entries} entries{after}, head {self.head[:16]}…"
        return f"audit log tampered: {self.problem}"


def verify(
    rows: Iterable[AuditRow], key: bytes | None, anchor: tuple[int, str] | None = None
) -> ChainReport:
    """Walk the chain in row order; report the first break and what kind of break it is."""
    listed = list(rows)
    docs = [_load(row) for row in listed]
    cuts = _checkpointed(listed, docs)
    by_hash = {row.hash: i for i, row in enumerate(listed)}
    expected_prev, last_seq = GENESIS, 0
    for i, row in enumerate(listed):
        if link(row.prev_hash, row.entry, key) != row.hash:
            return _broken(
                i, row, f"entry #{row.seq} was edited (its content no longer matches its hash)"
            )
        if row.prev_hash != expected_prev and row.seq > last_seq + 1:
            expected_prev = _bridge(cuts, last_seq, row.seq, expected_prev) or expected_prev
        if row.prev_hash != expected_prev:
            return _broken(i, row, _diagnose(listed, i, expected_prev, by_hash))
        if (relabelled := _relabelled(row, docs[i])) is not None:
            return _broken(i, row, relabelled)
        expected_prev, last_seq = row.hash, row.seq
    if anchor is not None and (problem := _off_anchor(listed, cuts, anchor)) is not None:
        return ChainReport(ok=False, entries=len(listed), head=expected_prev, problem=problem)
    pruned = sum(cut.last - cut.first + 1 for cut in cuts.values())
    return ChainReport(ok=True, entries=len(listed), head=expected_prev, pruned=pruned)


def _load(row: AuditRow) -> Any:
    try:
        return json.loads(row.entry)
    except ValueError:
        return None  # not JSON: its hash check reports it (or it was hashed like this)


def _checkpointed(rows: list[AuditRow], docs: list[Any]) -> dict[int, Cut]:
    """Runs of removed entries named by the checkpoints in the log, by first seq. A checkpoint
    only vouches for entries older than itself; a forged one breaks the chain like any entry."""
    cuts: dict[int, Cut] = {}
    for row, doc in zip(rows, docs, strict=True):
        if not isinstance(doc, dict) or doc.get("kind") != CHECKPOINT:
            continue
        if doc.get("operation_id") is not None or not isinstance(doc.get("data"), dict):
            continue
        for run in doc["data"].get("cuts", []):
            try:
                cut = Cut(
                    first=int(run["first"]),
                    last=int(run["last"]),
                    prev=str(run["prev"]),
                    hash=str(run["hash"]),
                )
            except (KeyError, TypeError, ValueError):
                continue
            if 0 < cut.first <= cut.last < row.seq:
                cuts[cut.first] = cut
    return cuts


def _bridge(cuts: dict[int, Cut], after: int, before: int, prev: str) -> str | None:
    """The hash the entry numbered `before` must link to when every seq between `after` and
    it was removed by checkpointed prunes, or None when the gap is not exactly covered."""
    seq = after + 1
    while seq < before:
        cut = cuts.get(seq)
        if cut is None or cut.prev != prev or cut.last >= before:
            return None
        prev, seq = cut.hash, cut.last + 1
    return prev


def _relabelled(row: AuditRow, doc: Any) -> str | None:
    """A column that says something else than the hashed entry: the row would be found (or
    hidden) under the wrong operation by every reader that selects by that column."""
    if not isinstance(doc, dict):
        return None
    for name, value in row.columns.items():
        if name not in doc:
            continue
        if isinstance(value, datetime):
            value = value.strftime(_TIME)
        if value != doc[name]:
            return (
                f"entry #{row.seq} was relabelled: its {name} column says {_short(value)} but "
                f"its hashed entry says {_short(doc[name])}"
            )
    return None


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:59] + "…"


def _off_anchor(rows: list[AuditRow], cuts: dict[int, Cut], anchor: tuple[int, str]) -> str | None:
    """The anchor (the head's seq and hash when it was taken) no longer in the log."""
    seq, head = anchor
    found = next((row for row in rows if row.seq == seq), None)
    if found is not None and found.hash == head:
        return None
    if found is None and any(c.last == seq and c.hash == head for c in cuts.values()):
        return None  # the anchor entry was pruned, and the checkpoint kept its hash
    if found is None and any(c.first <= seq <= c.last for c in cuts.values()):
        return (
            f"the anchor's entry #{seq} was pruned; check the anchor against the archive "
            "(`jobtrail archive verify FILE`) and take a new one with `jobtrail audit head`"
        )
    return (
        f"the log no longer matches the anchor ({seq} entries, head {head[:16]}…): entries "
        f"after #{min(seq, len(rows))} were cut or rewritten"
    )


def _diagnose(rows: list[AuditRow], i: int, expected_prev: str, by_hash: dict[str, int]) -> str:
    """Row i does not link to the row before it: say what most likely happened."""
    row = rows[i]
    copied = next((r for r in rows[:i] if r.hash == row.hash), None)
    if copied is not None:
        return f"entry #{row.seq} was inserted (a copy of #{copied.seq})"
    referenced = {r.prev_hash for r in rows}
    k = by_hash.get(row.prev_hash)
    if k is not None and k < i - 1 and all(r.hash not in referenced for r in rows[k + 1 : i]):
        return f"entry #{rows[k + 1].seq} was inserted (nothing in the chain links to it)"
    # The entry that belongs here (it links to the one before) sits somewhere later.
    belongs = next((j for j in range(i + 1, len(rows)) if rows[j].prev_hash == expected_prev), None)
    after = f"after #{rows[i - 1].seq}" if i else "first"
    if belongs is not None and k is not None:
        if belongs == i + 1:  # this one entry is out of place: it belongs after rows[k]
            return f"entry #{row.seq} was moved (reordered: it belongs after #{rows[k].seq})"
        return f"entry #{rows[belongs].seq} was moved (reordered: it belongs {after})"
    if belongs is not None:
        if row.hash in referenced:
            return f"entry #{row.seq} was moved (reordered: it is out of its place)"
        return f"entry #{row.seq} was inserted (nothing in the chain links to it)"
    if k is not None:
        return f"entry #{row.seq} was moved (reordered: it belongs after #{rows[k].seq})"
    if i == 0:
        return f"entries before #{row.seq} were deleted"
    before = rows[i - 1]
    if row.seq != before.seq + 1:
        return f"an entry was deleted between #{before.seq} and #{row.seq}"
    return (
        f"entry #{row.seq} was deleted (perhaps with entries after it) and the rest "
        f"renumbered (or #{before.seq} was rewritten and re-hashed)"
    )


def _broken(i: int, row: AuditRow, problem: str) -> ChainReport:
    return ChainReport(ok=False, entries=i, head="", problem=problem, seq=row.seq)
