"""`Result`: a collected result as the Python API hands it out, read back through its
result store, whose bytes are re-hashed against the digest recorded at validation."""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from jobtrail.core.model import ItemCounts, Operation
from jobtrail.core.states import State
from jobtrail.errors import ResultCorrupted, ResultError
from jobtrail.results import Results, ResultStore
from jobtrail.results.blobs import BlobStore, changed, is_file_location, read_checked

if TYPE_CHECKING:
    from jobtrail.ledger import Ledger


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


@dataclass(frozen=True, kw_only=True)
class Stored:
    """A result's content as read back now: a file on this machine (its path, size and
    first bytes) or the content from its result store, whole; `problem` when it cannot be
    read or is no longer what was validated."""

    path: Path | None = None
    content: bytes | None = None
    head: bytes = b""
    size: int | None = None
    problem: str | None = None


async def read_back(
    location: str,
    sha256: str | None,
    results: ResultStore | None,
    data_dir: Path | None = None,
    *,
    keep: int = 0,
) -> Stored:
    """The content at a recorded `location`, re-hashed against `sha256` (None: a file's own
    content address), keeping a file's first `keep` bytes. A file is found under `data_dir`
    when its location is an older, relative one; any other location is read through
    `results` (which re-checks its hash), or as a path when there is none. The Client, the
    agent tools and the CLI read results only through here."""
    if results is None or is_file_location(location):
        path = BlobStore(data_dir).locate(location) if data_dir else Path(location)
        try:
            read = await asyncio.to_thread(read_checked, path, sha256, keep)
        except OSError as exc:
            unreadable = f"the stored result cannot be read at {path} ({exc.strerror or exc})"
            return Stored(path=path, problem=unreadable)
        return Stored(path=path, head=read.head, size=read.size, problem=read.problem)
    try:
        content = await results.read(location)
    except ResultError as exc:
        return Stored(problem=str(exc))
    # the store checked the content against its location's address; this checks it against
    # what was validated too (a location swapped in the record names other bytes)
    problem = changed(sha256, hashlib.sha256(content).hexdigest())
    if problem:
        return Stored(problem=problem)
    return Stored(content=content, head=content[:keep], size=len(content))


async def read_result(
    op: Operation, results: Results, data_dir: Path, *, ledger: Ledger | None = None
) -> Result:
    """The operation's result summary, its content located and re-hashed, and (given the
    ledger) the summary checked against the digest and size its collection audited. The
    caller has checked that a summary exists."""
    summary = op.result
    assert summary is not None
    location = summary.location
    problem = await ledger.result_problem(op) if ledger is not None else None
    stored = None
    if location and problem is None:
        stored = await read_back(location, summary.sha256, results, data_dir)
        problem = stored.problem
    # never handed out when invalid: what was validated is not what is stored now
    kept = stored if stored and not problem else Stored()
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
        path=kept.path,
        content=kept.content,
    )
