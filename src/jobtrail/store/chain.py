"""Extending the audit chain inside a store transaction (both dialects)."""

from __future__ import annotations

from collections.abc import Sequence

from jobtrail.audit import GENESIS, AuditEntry, link


class AuditChain:
    def __init__(self, key: bytes | None) -> None:
        self._key = key

    def extend(
        self, last_seq: int, last_hash: str | None, entries: Sequence[AuditEntry]
    ) -> list[tuple[int, str | None, str, str, str]]:
        """Rows (seq, operation_id, entry, prev_hash, hash) continuing the chain."""
        rows = []
        prev = last_hash or GENESIS
        for offset, entry in enumerate(entries, 1):
            text = entry.canonical()
            digest = link(prev, text, self._key)
            rows.append((last_seq + offset, entry.operation_id, text, prev, digest))
            prev = digest
        return rows
