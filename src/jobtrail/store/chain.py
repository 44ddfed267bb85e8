"""Extending the audit chain inside a store transaction (both dialects), and keeping a keyed
chain keyed.

A chain is keyed (HMAC links) or not from its first entry on; a link made with another key,
or without one, would break it for good, and `audit verify` would then blame an innocent
entry. So the ledger records its keying with its first entry (migration 0011: `keyed`, and
for a keyed chain a check value, the HMAC of a fixed text under the key, which tells whether
a key is the chain's without revealing it), and a store whose key does not match refuses to
write anything. A chain begun before 0011 has no such row: its head entry tells, since it
verifies only under the chain's key.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from typing import Any

from jobtrail.core.audit import GENESIS, AuditEntry, hex_of, link, stored_hash

_CHECK_TEXT = b"jobtrail audit key check v1"
WRITE = "write to this ledger (nothing was written)"
VERIFY = "verify its chain"
NO_KEY = (
    "this ledger's audit chain is keyed and no audit key (JOBTRAIL_AUDIT_KEY) is set: set it "
    "to the chain's key to {act}"
)
OTHER_KEY = (
    "this ledger's audit chain is keyed with another key than the audit key given "
    "(JOBTRAIL_AUDIT_KEY): set it to the chain's key to {act}"
)
NOT_KEYED = (
    "this ledger's audit chain is not keyed but an audit key (JOBTRAIL_AUDIT_KEY) is set: "
    "unset it to {act}"
)
HEAD_UNVERIFIED = (
    "this ledger's newest audit entry does not verify {how} (the chain is keyed with another "
    "key, or was tampered with, which `jobtrail audit verify` tells): set the audit key "
    "(JOBTRAIL_AUDIT_KEY) to the chain's key to {act}"
)


def key_check(key: bytes) -> str:
    """The value that tells whether a key is the chain's: a MAC of a fixed text, from which
    the key cannot be recovered (no more than from any entry's link)."""
    return hmac.new(key, _CHECK_TEXT, hashlib.sha256).hexdigest()


class AuditChain:
    def __init__(self, key: bytes | None) -> None:
        self._key = key
        # Set once this store saw the ledger's keying row agree with its key: the row never
        # changes, so it is not read again.
        self.agreed = False

    def link(self, prev_hash: str, entry: str) -> str:
        """The hash an entry with `entry` linked to `prev_hash` has in this chain (hex)."""
        return link(prev_hash, entry, self._key)

    def extend(
        self, last_seq: int, last_hash: str | bytes | None, entries: Sequence[AuditEntry]
    ) -> list[tuple[int, str | None, str, str, str]]:
        """Rows (seq, operation_id, entry, prev_hash, hash) continuing the chain, the hashes
        in hex (`stored` gives them as the store writes them)."""
        texts = [(entry.operation_id, entry.canonical()) for entry in entries]
        return self.extend_texts(last_seq, last_hash, texts)

    def extend_texts(
        self,
        last_seq: int,
        last_hash: str | bytes | None,
        texts: Sequence[tuple[str | None, str]],
    ) -> list[tuple[int, str | None, str, str, str]]:
        """The same from the entries' (operation_id, canonical text), encoded beforehand
        (by the writer's caller: only the links, which need the head, are made here)."""
        rows = []
        prev = hex_of(last_hash) or GENESIS
        for offset, (operation_id, text) in enumerate(texts, 1):
            digest = link(prev, text, self._key)
            rows.append((last_seq + offset, operation_id, text, prev, digest))
            prev = digest
        return rows

    @staticmethod
    def stored(
        rows: Sequence[tuple[int, str | None, str, str, str]],
    ) -> list[tuple[int, str | None, str, bytes, bytes]]:
        """`extend`'s rows as stored from migration 0017 on: each hash as its 32 bytes, half
        the size of its hex text (what is linked stays the hex, so old entries verify)."""
        return [(s, op, e, stored_hash(p), stored_hash(h)) for s, op, e, p, h in rows]

    def judge(
        self, keying: Any, head: Any, act: str = WRITE
    ) -> tuple[str | None, tuple[bool, str | None]]:
        """(why this store's key cannot continue the chain or None, the keying row the chain
        has or is to get). `keying` is the stored row (keyed, key_check), None when there is
        none yet; `head` is then the newest entry (prev_hash, entry, hash), None when the
        chain has no entry: then this store's key starts it. `act` ends the sentence: what
        the right key would let one do."""
        mine: tuple[bool, str | None] = (True, key_check(self._key)) if self._key else (False, None)
        if keying is None and head is not None:  # a chain begun before migration 0011
            prev_hash, entry, digest = hex_of(head[0]), head[1], hex_of(head[2])
            if link(prev_hash, entry, None) == digest:
                keying = (False, None)
            elif self._key and link(prev_hash, entry, self._key) == digest:
                keying = mine
            else:
                how = "with the audit key given" if self._key else "without an audit key"
                return HEAD_UNVERIFIED.format(how=how, act=act), mine
        if keying is None:
            return None, mine
        keyed, check = bool(keying[0]), keying[1]
        stored = (keyed, check)
        if not keyed:
            return (NOT_KEYED.format(act=act) if self._key else None), stored
        if not self._key:
            return NO_KEY.format(act=act), stored
        if not hmac.compare_digest(str(check), key_check(self._key)):
            return OTHER_KEY.format(act=act), stored
        return None, stored
