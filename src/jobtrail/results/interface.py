"""The result-store interface and the one check every backend makes on every read.

A result is stored under the SHA-256 of its bytes, and its location names that digest, so
any reader can tell whether what came back is what was stored: a changed byte on disk, in
a database row or in an object store is caught here, not trusted."""

from __future__ import annotations

import hashlib
import re
from typing import Protocol

from jobtrail.errors import ResultCorrupted, ResultError

_DIGEST = re.compile(r"[0-9a-f]{64}")


class ResultStore(Protocol):
    """Where result bytes live. `put` is idempotent: the same content, the same location."""

    async def put(self, content: bytes) -> str:
        """Store `content` durably; return a location that names its digest."""
        ...

    async def read(self, location: str) -> bytes:
        """The bytes at `location`, re-hashed: ResultCorrupted when they do not match."""
        ...

    async def exists(self, location: str) -> bool: ...

    async def close(self) -> None: ...


def digest_of(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def digest_in(location: str) -> str:
    """The digest a location was stored under (its last path part)."""
    digest = location.rstrip("/").rsplit("/", 1)[-1]
    if not _DIGEST.fullmatch(digest):
        raise ResultError(
            f"{location!r} is not a content-addressed result location (it should end in a "
            "sha256 digest); it was not written by jobtrail's result store"
        )
    return digest


def checked(location: str, content: bytes) -> bytes:
    """`content` if it hashes to the digest in `location`; otherwise ResultCorrupted."""
    expected = digest_in(location)
    actual = digest_of(content)
    if actual != expected:
        raise ResultCorrupted(
            f"the result at {location} was changed after it was stored: its bytes hash to "
            f"sha256:{actual}, not the sha256:{expected} it was stored under. Do not use it; "
            "restore it from a backup, or submit the job again"
        )
    return content
