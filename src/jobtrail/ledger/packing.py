"""Packing finished operations in place (`jobtrail prune --pack-after AGE`, migration 0023).

A packed operation's rows — the operation, its transitions, attempts, observations, leases
and audit entries — are replaced by one row: the lines the archive writes for one operation
(ledger/archive.py `operation_records`, so there is one encoding of an operation, not two),
joined by newlines and compressed with zstd, with a dictionary trained on the ledger's own
finished operations once a batch holds enough of them (plain zstd before). Packing is
`prune`'s protocol (store/retention.py) in batches, one transaction each: the checkpoint it
appends to the audit chain names the removed entries, as a prune's does, and binds, per
operation, the sha256 of its packed bytes (as an archive's checkpoint binds its lines), and
the sha256 of each dictionary used. `audit verify` checks every packed row
and dictionary against those digests (`packed_problems`), so a packed row edited, removed or
inserted, or a dictionary edited, is named; readers unpack transparently (ledger/reading.py).

Why zstandard (python-zstandard, the `pack` extra): the reference binding of zstd, with
`train_dictionary`; Python 3.11's standard library has no zstd (`compression.zstd` arrives in
3.14), and zstd with a trained dictionary is what brings a finished operation to about DBOS's
bytes (bench/RESULTS.md). It is imported only when packing or reading a packed operation.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from jobtrail.core.audit import CHECKPOINT, AuditRow, cuts_of
from jobtrail.errors import InvalidInput, StoreError
from jobtrail.ledger.archive import assemble, operation_records, record_text
from jobtrail.store.retention import PackDictionary, PackedBatch, PrunedOperation

# zstd level: measured on the peer lifecycle's operations (bench/RESULTS.md), 15 packs one
# in 1.73 KB for 1.2 ms of CPU, 3 in 1.86 KB for 0.03 ms, 19 in 1.72 KB for 3 ms.
LEVEL = 15
TRAIN_AT = 64  # fewest operations in a batch to train a dictionary on
DICTIONARY_BYTES = 16 * 1024  # 32 KB and more packed no smaller
EXTRA = (
    "packing, and reading a packed operation, need zstandard: install jobtrail's `pack` "
    "extra (pip install 'jobtrail[pack]')"
)


def _zstd() -> Any:
    try:
        import zstandard
    except ImportError:
        raise InvalidInput(EXTRA) from None
    return zstandard


def require() -> None:
    """Raise InvalidInput naming the extra when zstandard is not installed."""
    _zstd()


def encode(item: PrunedOperation) -> list[str]:
    """One operation's lines, as its archive holds them."""
    return [record_text(record) for record in operation_records(item)]


def seal(
    items: Sequence[PrunedOperation], newest: PackDictionary | None, *, train_at: int = TRAIN_AT
) -> PackedBatch:
    """Compress each of `items` (with `newest`, or with a dictionary trained on them when the
    ledger has none and they are enough) and say what the checkpoint binds of them."""
    zstd = _zstd()
    encoded = [(item.operation.operation_id, encode(item)) for item in items]
    plain = [("\n".join(lines)).encode("utf-8") for _, lines in encoded]
    trained = None
    if newest is None and len(items) >= train_at:
        trained = _train(zstd, plain)
    using = newest or trained
    options = {} if using is None else {"dict_data": zstd.ZstdCompressionDict(using.data)}
    compressor = zstd.ZstdCompressor(level=LEVEL, **options)
    rows, bound = [], {}
    for (op_id, _), text in zip(encoded, plain, strict=True):
        data = compressor.compress(text)
        dictionary_id = using.dictionary_id if using else None
        rows.append((op_id, dictionary_id, data))
        # The bytes' digest binds every line (decompression is deterministic); the lines'
        # own digests, as an archive's checkpoint holds them, would add 70 B an operation.
        bound[op_id] = {"data": _sha(data), "dictionary": dictionary_id}
    dictionaries = {str(using.dictionary_id): using.digest} if using else {}
    return PackedBatch(
        rows=rows, trained=trained, binding={"operations": bound, "dictionaries": dictionaries}
    )


def _train(zstd: Any, samples: list[bytes]) -> PackDictionary | None:
    try:
        trained = zstd.train_dictionary(DICTIONARY_BYTES, samples)
    except zstd.ZstdError:
        return None  # too little to learn from: plain zstd until a later batch
    data = trained.as_bytes()
    return PackDictionary(dictionary_id=1, digest=_sha(data), data=data, samples=len(samples))


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def unpack(data: bytes, dictionary: PackDictionary | None) -> PrunedOperation:
    """The operation a packed row holds, with everything it owned."""
    zstd = _zstd()
    options = {} if dictionary is None else {"dict_data": zstd.ZstdCompressionDict(dictionary.data)}
    try:
        text = zstd.ZstdDecompressor(**options).decompress(data).decode("utf-8")
        records = [json.loads(line) for line in text.split("\n")]
        (item,) = assemble({}, records).operations.values()
    except (zstd.ZstdError, ValueError) as exc:
        raise StoreError(
            f"a packed operation cannot be read ({exc}); `jobtrail audit verify` tells what "
            "was changed"
        ) from None
    return item


def packed_problems(
    rows: Sequence[AuditRow],
    packed: Sequence[tuple[str, int | None, bytes]],
    dictionaries: Mapping[int, PackDictionary],
    link: Callable[[str, str], str],
) -> tuple[list[str], list[PrunedOperation]]:
    """What is wrong with the packed rows and dictionaries given the checkpoints in `rows`
    (the whole chain), and the packed operations that check out, unpacked."""
    bound, batches = _bound(rows)
    problems, found = [], []
    by_batch: dict[int, list[AuditRow]] = {}
    seen, spoiled = set(), set()
    for op_id, dictionary_id, data in packed:
        seen.add(op_id)
        where = bound.get(op_id)
        if where is None:
            problems.append(
                f"packed operation {op_id} is bound by no packing checkpoint (inserted)"
            )
            continue
        seq, doc = where
        problem = _row_problem(op_id, seq, doc, dictionary_id, data, batches[seq], dictionaries)
        if problem is not None:
            problems.append(problem)
            spoiled.add(seq)
            continue
        dictionary = dictionaries.get(dictionary_id) if dictionary_id is not None else None
        item = unpack(data, dictionary)
        found.append(item)
        by_batch.setdefault(seq, []).extend(item.audit)
    for op_id, (seq, _) in bound.items():
        if op_id not in seen:
            problems.append(
                f"packed operation {op_id}, bound by checkpoint #{seq}, is missing (its packed "
                "row was removed)"
            )
            spoiled.add(seq)
    for seq, entries in sorted(by_batch.items()):
        if seq not in spoiled:  # a batch with a row missing or edited: named above
            problems += _entries_problems(seq, entries, rows, link)
    return problems, found


def _bound(rows: Iterable[AuditRow]) -> tuple[dict[str, tuple[int, Any]], dict[int, Any]]:
    """op id -> (checkpoint seq, what it binds of the op); seq -> the checkpoint's pack."""
    bound: dict[str, tuple[int, Any]] = {}
    batches: dict[int, Any] = {}
    for row in rows:
        if row.columns.get("operation_id") is not None:
            continue
        try:
            doc = json.loads(row.entry)
        except ValueError:
            continue
        if not isinstance(doc, dict) or doc.get("kind") != CHECKPOINT:
            continue
        pack = (doc.get("data") or {}).get("pack")
        if not isinstance(pack, dict) or not isinstance(pack.get("operations"), dict):
            continue
        batches[row.seq] = pack
        for op_id, bound_op in pack["operations"].items():
            bound[op_id] = (row.seq, bound_op)
    return bound, batches


def _row_problem(
    op_id: str,
    seq: int,
    doc: Any,
    dictionary_id: int | None,
    data: bytes,
    batch: Any,
    dictionaries: Mapping[int, PackDictionary],
) -> str | None:
    if not isinstance(doc, dict) or _sha(data) != doc.get("data"):
        return (
            f"the packed row of operation {op_id} was edited: its bytes are not what "
            f"checkpoint #{seq} bound"
        )
    if dictionary_id != doc.get("dictionary"):
        return (
            f"the packed row of operation {op_id} was edited: it names dictionary "
            f"{dictionary_id}, checkpoint #{seq} bound {doc.get('dictionary')}"
        )
    if dictionary_id is None:
        return None
    dictionary = dictionaries.get(dictionary_id)
    digest = (batch.get("dictionaries") or {}).get(str(dictionary_id))
    if dictionary is None:
        return f"pack dictionary {dictionary_id}, which operation {op_id} needs, was removed"
    if _sha(dictionary.data) != digest or dictionary.digest != digest:
        return (
            f"pack dictionary {dictionary_id} was edited: it is not what checkpoint #{seq} "
            f"bound (operation {op_id} is packed with it)"
        )
    return None


def _entries_problems(
    seq: int, entries: list[AuditRow], rows: Sequence[AuditRow], link: Callable[[str, str], str]
) -> list[str]:
    """The packed entries of checkpoint #seq's batch hash to themselves and form the runs it
    names (as an archive's entries must: archive.verify_archive)."""
    entries.sort(key=lambda r: r.seq)
    problems = [
        f"packed entry #{row.seq} was edited (its content no longer matches its hash)"
        for row in entries
        if link(row.prev_hash, row.entry) != row.hash
    ]
    checkpoint = next((row for row in rows if row.seq == seq), None)
    named = json.loads(checkpoint.entry)["data"].get("cuts", []) if checkpoint else []
    found = [cut.doc() for cut in cuts_of(entries, {row.seq for row in entries})]
    if found != named:
        problems.append(
            f"the packed entries of checkpoint #{seq} form {len(found)} runs that differ from "
            f"the {len(named)} it names: entries are missing or extra"
        )
    return problems
