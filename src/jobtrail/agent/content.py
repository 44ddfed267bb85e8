"""Reading a stored result for an agent: all of it when small, else a bounded preview.

The content is the provider's answer to the agent's own request; it is read from the
content-addressed file the worker stored, never fetched again."""

from __future__ import annotations

import asyncio
import codecs
from dataclasses import dataclass
from pathlib import Path

from jobtrail.errors import ResultError
from jobtrail.results import ResultStore
from jobtrail.worker.blobs import read_checked

INLINE_LIMIT = 64 * 1024  # bytes returned whole
PREVIEW_BYTES = 4 * 1024  # bytes shown of anything larger


@dataclass(frozen=True, kw_only=True)
class Read:
    content: str | None
    preview: str | None
    note: str
    problem: str | None = None  # the stored content changed since it was validated, or is gone


async def read_stored(location: str, results: ResultStore | None = None) -> Read:
    if results is None or not location.startswith(("db:", "s3://")):
        return await asyncio.to_thread(_read, Path(location))
    # Not a file: read it whole through its store, which re-checks its hash.
    try:
        content = await results.read(location)
    except ResultError as exc:
        return Read(content=None, preview=None, note=str(exc), problem=str(exc))
    return _shown(content, location)


def _shown(content: bytes, location: str) -> Read:
    size = len(content)
    head = content if size <= INLINE_LIMIT else content[:PREVIEW_BYTES]
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(head, final=size <= INLINE_LIMIT)
    except UnicodeDecodeError:
        return Read(content=None, preview=None, note=f"the content is binary ({size} bytes)")
    if size <= INLINE_LIMIT:
        return Read(content=text, preview=None, note=f"the whole content ({size} bytes)")
    return Read(
        content=None,
        preview=text,
        note=(
            f"the content is {size} bytes, more than {INLINE_LIMIT} returned whole: the preview "
            f"holds its first {len(head)} bytes, and the whole content is at {location}"
        ),
    )


def _read(path: Path) -> Read:
    try:  # the whole file is hashed: what was validated is served, or nothing is
        stored = read_checked(path, None, keep=INLINE_LIMIT + 1)
    except OSError as exc:
        unreadable = f"the stored content cannot be read at {path} ({exc.strerror or exc})"
        return Read(content=None, preview=None, note=unreadable, problem=unreadable)
    if stored.problem:
        return Read(content=None, preview=None, note=stored.problem, problem=stored.problem)
    size = stored.size
    head = stored.head if size <= INLINE_LIMIT else stored.head[:PREVIEW_BYTES]
    whole = size <= INLINE_LIMIT and len(head) == size
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(head, final=whole)
    except UnicodeDecodeError:
        return Read(
            content=None,
            preview=None,
            note=f"the content is binary ({size} bytes); read it from {path}",
        )
    if whole:
        return Read(content=text, preview=None, note=f"the whole content ({size} bytes)")
    return Read(
        content=None,
        preview=text,
        note=(
            f"the content is {size} bytes, more than {INLINE_LIMIT} returned whole: the preview "
            f"holds its first {len(head)} bytes, and the whole content is at {path}"
        ),
    )
