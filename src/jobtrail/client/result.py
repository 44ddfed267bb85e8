"""`Result`: a collected result as the Python API hands it out, read back through its
result store, whose bytes are re-hashed against the digest recorded at validation."""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass
from pathlib import Path

from jobtrail.core.model import ItemCounts, Operation
from jobtrail.core.states import State
from jobtrail.errors import ResultCorrupted, ResultError
from jobtrail.results import Results
from jobtrail.worker.blobs import BlobStore, changed, is_file_location, read_checked


@dataclass(frozen=True, kw_only=True)
class Result:
    """What result collection found for one operation, and where its content is.

    `valid` is False when validation failed, or when the stored content no longer hashes to
    what was validated (the reason is in `problems`, and no content is handed out). A result
    kept as a file on this machine is given as `path` (not read into memory); one kept in the
    database or an object store is given as `content`. `read_bytes()` works for both."""

    operation_id: str
    state: State
    valid: bool
    problems: tuple[str, ...]
    checks: tuple[str, ...]
    content_type: str | None
    size: int | None
    sha256: str | None
    records: int | None  # as counted by validation
    items: ItemCounts | None  # per-item outcomes of a batch
    location: str | None  # as recorded in the ledger
    path: Path | None = None
    content: bytes | None = None

    def read_bytes(self) -> bytes:
        """The content; a file is hashed again as it is read (ResultCorrupted if changed)."""
        if self.content is not None:
            return self.content
        if self.path is None:
            raise ResultError(
                f"{self.operation_id} has no readable stored content: "
                + ("; ".join(self.problems) or "none was recorded")
            )
        content = self.path.read_bytes()
        problem = changed(self.sha256, hashlib.sha256(content).hexdigest())
        if problem:
            raise ResultCorrupted(f"{self.path}: {problem}")
        return content

    def text(self, encoding: str = "utf-8") -> str:
        return self.read_bytes().decode(encoding)


async def read_result(op: Operation, results: Results, data_dir: Path) -> Result:
    """The operation's result summary, its content located and re-hashed. The caller has
    checked that a summary exists."""
    summary = op.result
    assert summary is not None
    path: Path | None = None
    content: bytes | None = None
    problem: str | None = None
    location = summary.location
    if location and is_file_location(location):
        path = BlobStore(data_dir).locate(location)
        try:
            problem = (await asyncio.to_thread(read_checked, path, summary.sha256)).problem
        except OSError as exc:
            problem = f"the stored result cannot be read at {path} ({exc.strerror or exc})"
    elif location:
        try:
            content = await results.read(location)
        except ResultError as exc:
            problem = str(exc)
    if problem:  # never handed out as valid: what was validated is not what is stored now
        path, content = None, None
    return Result(
        operation_id=op.operation_id,
        state=op.state,
        valid=summary.valid and problem is None,
        problems=(*summary.problems, *([problem] if problem else [])),
        checks=summary.checks,
        content_type=summary.content_type,
        size=summary.size,
        sha256=summary.sha256,
        records=summary.records,
        items=summary.items,
        location=location,
        path=path,
        content=content,
    )
