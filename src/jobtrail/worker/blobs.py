"""Content-addressed result storage: results/<aa>/<sha256>, written atomically and synced,
so a result recorded as stored survives a crash of the machine."""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
from pathlib import Path


class BlobStore:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def path_for(self, digest: str) -> Path:
        return self.root / "results" / digest[:2] / digest

    def put_sync(self, content: bytes) -> str:
        digest = hashlib.sha256(content).hexdigest()
        final = self.path_for(digest)
        if final.exists() and final.stat().st_size == len(content):
            return str(final)
        final.parent.mkdir(parents=True, exist_ok=True)
        # One temporary name per writing thread: the same content may be stored by two
        # threads at once (equal results of different jobs), and they must not share it.
        writer = f"{os.getpid()}.{threading.get_ident()}"
        temporary = final.with_name(f".{digest}.{writer}.tmp")
        with open(temporary, "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, final)
        directory = os.open(final.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
        return str(final)

    async def put(self, content: bytes) -> str:
        return await asyncio.to_thread(self.put_sync, content)

    @staticmethod
    def read(location: str) -> bytes:
        return Path(location).read_bytes()
