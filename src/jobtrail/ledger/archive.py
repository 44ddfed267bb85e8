"""The archive `prune` writes: gzip-compressed JSON Lines, one record per line.

    {"type": "header", "format": "jobtrail-archive", "version": 1, ...}
    {"type": "checkpoint", "seq": ..., "entry": ..., "prev_hash": ..., "hash": ...}
    {"type": "operation", ...}   then its "transition", "attempt", "observation", "lease"
                                 and "audit" lines, operation by operation, each operation
    {"type": "digests", ...}     closed by the sha256 of each of its lines

Every line is bound by the checkpoint (jobtrail.ledger.archive_lines): the checkpoint entry, in the
ledger's chain, holds the header's digest and a digest of each operation's line digests, so
`archive verify` and `archive show` refuse any line changed, dropped, moved or inserted.

Records are stored in the SQLite column form (times as fixed-width UTC text, JSON columns as
canonical JSON text), whichever store they came from, so one reader serves both. The file is
written next to its final name, flushed to disk and renamed before the prune commits: an
archive either exists whole or not at all, and rows are never removed without one.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from jobtrail.core.audit import AuditRow, audit_row, cuts_of, link
from jobtrail.core.model import Attempt, Observation, Operation, Transition
from jobtrail.errors import InvalidInput, NotFound
from jobtrail.ledger.archive_lines import DIGESTS, Line, check_lines, digest_of, line_digest
from jobtrail.store.leases import CLOCK_FIELDS, Lease
from jobtrail.store.retention import Pruned, PrunedOperation
from jobtrail.store.sqlite import CODEC

FORMAT, VERSION = "jobtrail-archive", 1


def write(path: Path, pruned: Pruned) -> None:
    """Write `pruned` to `path` durably (see the module docstring); never overwrites."""
    if path.exists():
        raise InvalidInput(f"the archive {path} already exists; name a new file")
    temporary = path.with_name(f".{path.name}.partial")
    # Readable by its owner only: it holds what the ledger held (requests, answers, audit).
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as raw:
        with gzip.GzipFile(filename=path.name, mode="wb", fileobj=raw, mtime=0) as packed:
            for record in _records(pruned):
                packed.write(_line(record))
        raw.flush()
        os.fsync(raw.fileno())
    os.replace(temporary, path)
    _sync_folder(path.parent)


def _sync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def record_text(record: dict[str, Any]) -> str:
    # default=str: a column a later migration adds (a timestamptz, say) is kept as text.
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str)


def _line(record: dict[str, Any]) -> bytes:
    return record_text(record).encode() + b"\n"


def _records(pruned: Pruned) -> Iterator[dict[str, Any]]:
    yield header_record(pruned)
    if pruned.checkpoint is not None:
        yield {"type": "checkpoint", **_audit_doc(pruned.checkpoint)}
    for item in pruned.operations:
        lines = list(operation_records(item))
        yield from lines
        yield {
            "type": DIGESTS,
            "operation_id": item.operation.operation_id,
            "lines": [line_digest(record_text(record)) for record in lines],
        }


def binding(pruned: Pruned) -> dict[str, Any]:
    """What the checkpoint of `pruned` binds of the archive that will hold it: the header
    line's digest, and for each operation the digest of its lines' digests (the archive's
    "digests" line lists those), so every line but the checkpoint's own is in the chain."""
    return {
        "header": line_digest(record_text(header_record(pruned))),
        "operations": {
            item.operation.operation_id: digest_of(
                [line_digest(record_text(record)) for record in operation_records(item)]
            )
            for item in pruned.operations
        },
    }


def header_record(pruned: Pruned) -> dict[str, Any]:
    t = CODEC.t_out
    return {
        "type": "header",
        "format": FORMAT,
        "version": VERSION,
        "pruned_at": t(pruned.at),
        "finished_before": t(pruned.finished_before),
        "actor": pruned.actor,
        "operations": len(pruned.operations),
        "audit_entries": pruned.entries,
    }


def operation_records(item: PrunedOperation) -> Iterator[dict[str, Any]]:
    """One operation's lines, in the order the archive holds them."""
    t = CODEC.t_out
    yield {"type": "operation", **CODEC.operation_row(item.operation)}
    for tr in item.history:
        yield {"type": "transition", "seq": tr.seq, **CODEC.transition_row(tr)}
    for at in item.attempts:
        yield {"type": "attempt", **CODEC.attempt_row(at)}
    for ob in item.observations:
        yield {"type": "observation", **CODEC.observation_row(ob)}
    for lease in item.leases:
        yield {
            "type": "lease",
            "operation_id": lease.operation_id,
            "fence": lease.fence,
            "owner": lease.owner,
            "acquired_at": t(lease.acquired_at),
            "expires_at": t(lease.expires_at),
            "released_at": t(lease.released_at),
            **{name: getattr(lease, name) for name in CLOCK_FIELDS},
        }
    for row in item.audit:
        yield {"type": "audit", **_audit_doc(row)}


def _audit_doc(row: AuditRow) -> dict[str, Any]:
    return {
        **row.columns,
        "seq": row.seq,
        "entry": row.entry,
        "prev_hash": row.prev_hash,
        "hash": row.hash,
    }


@dataclass(frozen=True, kw_only=True)
class Archive:
    header: dict[str, Any]
    checkpoint: AuditRow | None
    operations: dict[str, PrunedOperation]
    lines: tuple[Line, ...] = ()  # every line as read (number, text, type, operation id)

    def checkpoint_time(self) -> datetime:
        """When the operations left the ledger (what `explain` calls now)."""
        when = CODEC.t_in(self.header.get("pruned_at"))
        assert when is not None
        return when

    @property
    def lines_bound(self) -> bool:
        """Whether its checkpoint binds every line (else only the audit lines: an archive
        written by a jobtrail from before that binding)."""
        if self.checkpoint is None:
            return False
        data = json.loads(self.checkpoint.entry).get("data", {})
        return isinstance(data, dict) and isinstance(data.get("archive"), dict)

    def get(self, operation_id: str) -> PrunedOperation:
        found = self.operations.get(operation_id)
        if found is None:
            raise NotFound(f"no operation {operation_id!r} in this archive")
        return found


def read(path: Path) -> Archive:
    """Load an archive; a file that is not one is refused with what is wrong with it."""
    try:
        with gzip.open(path, "rt", encoding="utf-8") as opened:
            texts = [(n, line.rstrip("\n")) for n, line in enumerate(opened, 1) if line.strip()]
        records = [json.loads(text) for _, text in texts]
    except FileNotFoundError:
        raise NotFound(f"no archive at {path}") from None
    except (OSError, EOFError, ValueError) as exc:
        raise InvalidInput(f"{path} is not a readable jobtrail archive ({exc})") from None
    header = records[0] if records else {}
    if header.get("type") != "header" or header.get("format") != FORMAT:
        raise InvalidInput(f"{path} is not a jobtrail archive (no archive header line)")
    if header.get("version") != VERSION:
        raise InvalidInput(
            f"{path} is archive format version {header.get('version')}; this jobtrail reads "
            f"version {VERSION}: use the jobtrail that wrote it"
        )
    lines = tuple(
        Line(
            number=n,
            text=text,
            kind=str(record.get("type")) if isinstance(record, dict) else "",
            operation_id=record.get("operation_id") if isinstance(record, dict) else None,
        )
        for (n, text), record in zip(texts, records, strict=True)
    )
    return replace(assemble(header, records[1:]), lines=lines)  # assemble pops "type"


def assemble(header: dict[str, Any], records: list[dict[str, Any]]) -> Archive:
    checkpoint = None
    owned: dict[str, dict[str, list[Any]]] = {}
    ops: dict[str, Operation] = {}
    for record in records:
        kind = record.pop("type", None)
        if kind == "checkpoint":
            checkpoint = audit_row(record)
            continue
        if kind == "operation":
            ops[record["operation_id"]] = CODEC.operation(record)
            continue
        decoded = _decode(kind, record)
        if decoded is not None:
            bucket = owned.setdefault(record["operation_id"], {})
            bucket.setdefault(str(kind), []).append(decoded)
    return Archive(
        header=header,
        checkpoint=checkpoint,
        operations={
            op_id: PrunedOperation(
                operation=op,
                history=owned.get(op_id, {}).get("transition", []),
                attempts=owned.get(op_id, {}).get("attempt", []),
                observations=owned.get(op_id, {}).get("observation", []),
                leases=owned.get(op_id, {}).get("lease", []),
                audit=owned.get(op_id, {}).get("audit", []),
            )
            for op_id, op in ops.items()
        },
    )


def _decode(
    kind: Any, record: dict[str, Any]
) -> Transition | Attempt | Observation | Lease | AuditRow | None:
    if kind == "transition":
        return CODEC.transition(record)
    if kind == "attempt":
        return CODEC.attempt(record)
    if kind == "observation":
        return CODEC.observation(record)
    if kind == "lease":
        return Lease(
            operation_id=record["operation_id"],
            fence=record["fence"],
            owner=record["owner"],
            acquired_at=datetime.fromisoformat(record["acquired_at"]),
            expires_at=datetime.fromisoformat(record["expires_at"]),
            released_at=CODEC.t_in(record["released_at"]),
            **{name: record.get(name) for name in CLOCK_FIELDS},  # 0012; absent before
        )
    if kind == "audit":
        return audit_row(record)
    return None  # a record type a later version added: skipped, not misread


def verify_archive(archive: Archive, key: bytes | None) -> list[str]:
    """Problems with the archive's slice of the audit chain (empty when it checks out):
    every entry hashes to itself, and the runs they form are the runs its checkpoint names,
    linked end to end, so the ledger's chain and the archive vouch for each other."""
    rows = sorted((r for p in archive.operations.values() for r in p.audit), key=lambda r: r.seq)
    problems = [
        f"archived entry #{row.seq} was edited (its content no longer matches its hash)"
        for row in rows
        if link(row.prev_hash, row.entry, key) != row.hash
    ]
    checkpoint = archive.checkpoint
    if checkpoint is None:
        return [*problems, "the archive holds no checkpoint entry"] if rows else problems
    if link(checkpoint.prev_hash, checkpoint.entry, key) != checkpoint.hash:
        problems.append("the archive's checkpoint entry does not match its hash")
        return problems
    data = json.loads(checkpoint.entry).get("data", {})
    bound = data.get("archive")
    if isinstance(bound, dict):  # absent from the checkpoints of older jobtrails
        problems += check_lines(archive.lines, bound, checkpoint.seq)
    named = data.get("cuts", [])
    found = [cut.doc() for cut in cuts_of(rows, {row.seq for row in rows})]
    if found != named:
        problems.append(
            f"the archived entries form {len(found)} runs that differ from the "
            f"{len(named)} the checkpoint #{checkpoint.seq} names: entries are missing or extra"
        )
    by_seq = {row.seq: row for row in rows}
    for row in rows:
        before = by_seq.get(row.seq - 1)
        if before is not None and row.prev_hash != before.hash:
            problems.append(f"archived entry #{row.seq} does not link to #{before.seq}")
    return problems
