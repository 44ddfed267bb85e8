"""Reading a stored result for an agent: all of it when small, else a bounded preview.

The content is the provider's answer to the agent's own request; it is read back from where
the worker stored it (client.result.read_back, which re-hashes it), never fetched again."""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from pathlib import Path

from jobtrail.client.result import read_back
from jobtrail.results import ResultStore

INLINE_LIMIT = 64 * 1024  # bytes returned whole
PREVIEW_BYTES = 4 * 1024  # bytes shown of anything larger


@dataclass(frozen=True, kw_only=True)
class Read:
    content: str | None
    preview: str | None
    note: str
    problem: str | None = None  # the stored content changed since it was validated, or is gone


async def read_stored(
    location: str,
    results: ResultStore | None = None,
    *,
    sha256: str | None = None,
    data_dir: Path | None = None,
) -> Read:
    """The content at `location` as an agent is shown it; what was validated is served, or
    nothing is (`problem` says why)."""
    stored = await read_back(location, sha256, results, data_dir, keep=INLINE_LIMIT + 1)
    if stored.problem or stored.size is None:
        problem = stored.problem or f"nothing is stored at {location}"
        return Read(content=None, preview=None, note=problem, problem=problem)
    size, where = stored.size, stored.path or location
    whole = size <= INLINE_LIMIT
    head = stored.head if whole else stored.head[:PREVIEW_BYTES]
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(head, final=whole)
    except UnicodeDecodeError:
        where_to = f"; read it from {stored.path}" if stored.path else ""
        return Read(
            content=None, preview=None, note=f"the content is binary ({size} bytes){where_to}"
        )
    if whole:
        return Read(content=text, preview=None, note=f"the whole content ({size} bytes)")
    return Read(
        content=None,
        preview=text,
        note=(
            f"the content is {size} bytes, more than {INLINE_LIMIT} returned whole: the preview "
            f"holds its first {len(head)} bytes, and the whole content is at {where}"
        ),
    )
