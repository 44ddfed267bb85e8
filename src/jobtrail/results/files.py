"""Results as content-addressed files under a directory (one machine, or a shared mount).

Writing is `BlobStore`'s (atomic, synced); the location stays a plain path, as in ledgers
written before there was a choice of store."""

from __future__ import annotations

import asyncio
from pathlib import Path

from jobtrail.errors import ResultError
from jobtrail.results.blobs import BlobStore
from jobtrail.results.interface import checked, digest_in


class FileResults:
    def __init__(self, root: str | Path) -> None:
        # Absolute, so the recorded location means the same file whatever the reader's cwd.
        self.blobs = BlobStore(Path(root).absolute())

    async def put(self, content: bytes) -> str:
        return await self.blobs.put(content)

    async def read(self, location: str) -> bytes:
        path = _path(location)
        digest_in(str(path))
        try:
            content = await asyncio.to_thread(path.read_bytes)
        except OSError as exc:
            raise ResultError(
                f"the stored result cannot be read at {path}: {exc.strerror or exc}; check that "
                "this machine sees the same results directory as the worker that stored it"
            ) from None
        return checked(location, content)

    async def exists(self, location: str) -> bool:
        return await asyncio.to_thread(_path(location).is_file)

    async def close(self) -> None:
        return None


def _path(location: str) -> Path:
    return Path(location.removeprefix("file://"))
