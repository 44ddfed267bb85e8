"""Content-addressed result storage: results/<aa>/<sha256>, written atomically and synced,
so a result recorded as stored survives a crash of the machine. Locations are absolute, so
they mean the same file whatever the reader's working directory; every read re-hashes."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
import hmac
import os
import re
import socket
import threading
from dataclasses import dataclass
from pathlib import Path

_DIGEST = re.compile(r"[0-9a-f]{64}")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_CHUNK = 1 << 20


class BlobStore:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).expanduser().absolute()
        self._swept = False  # leftovers of killed writers are removed before the first write

    def path_for(self, digest: str) -> Path:
        return self.root / "results" / digest[:2] / digest

    def locate(self, location: str) -> Path:
        """The file a recorded location names. Ledgers written before locations were absolute
        hold them relative to the writer's working directory: those are found by their
        content address under this store's root instead."""
        path = Path(location)
        if path.is_absolute() or not _DIGEST.fullmatch(path.name):
            return path
        return self.path_for(path.name)

    def put_sync(self, content: bytes) -> str:
        digest = hashlib.sha256(content).hexdigest()
        final = self.path_for(digest)
        if final.exists() and final.stat().st_size == len(content):
            return str(final)
        if not self._swept:
            self._swept = True
            self.remove_stale_temporaries()
        final.parent.mkdir(parents=True, exist_ok=True)
        # One temporary name per writing thread: the same content may be stored by two
        # threads at once (equal results of different jobs), and they must not share it. The
        # host and pid in the name let a later start tell a dead writer's leftovers.
        writer = f"{_host()}.{os.getpid()}.{threading.get_ident()}"
        temporary = final.with_name(f".{digest}.{writer}.tmp")
        try:
            with open(temporary, "wb") as handle:
                handle.write(content)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, final)
        finally:  # a failed or interrupted write leaves no partial file behind
            temporary.unlink(missing_ok=True)
        directory = os.open(final.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
        return str(final)

    async def put(self, content: bytes) -> str:
        return await asyncio.to_thread(self.put_sync, content)

    def remove_stale_temporaries(self) -> int:
        """Remove temporary files that writers on this host left when they were killed
        mid-write (their process is gone); returns how many. Another host's, or a live
        process's, are left alone: they may still be written."""
        removed = 0
        for temporary in self.root.glob("results/*/.*.tmp"):
            parts = temporary.name.split(".")  # "", digest, host..., pid, thread, "tmp"
            if len(parts) < 6 or ".".join(parts[2:-3]) != _host() or _alive(parts[-3]):
                continue
            with contextlib.suppress(FileNotFoundError):
                temporary.unlink()
                removed += 1
        return removed

    @staticmethod
    def read(location: str) -> bytes:
        """The content at `location`; ResultChanged if it no longer hashes to its address."""
        path = Path(location)
        content = path.read_bytes()
        expected = path.name if _DIGEST.fullmatch(path.name) else None
        problem = changed(expected, hashlib.sha256(content).hexdigest())
        if problem:
            raise ResultChanged(errno.EIO, problem)
        return content


class ResultChanged(OSError):
    """A stored result no longer hashes to what was validated. An OSError, as an unreadable
    file is: callers that handle a result they cannot read handle this one the same way."""

    def __str__(self) -> str:
        return str(self.strerror)


@dataclass(frozen=True, kw_only=True)
class StoredRead:
    """A stored result read through once: its size, its first bytes, and what is wrong."""

    path: Path
    size: int
    head: bytes
    problem: str | None  # None when the content still hashes to what was validated


def read_checked(path: Path, expected: str | None, keep: int = 0) -> StoredRead:
    """Hash the whole file at `path` against `expected` (hex sha256, or None for the file's
    own content address), keeping its first `keep` bytes. OSError if it cannot be read."""
    if expected is None and _DIGEST.fullmatch(path.name):
        expected = path.name
    digest, head, size = hashlib.sha256(), b"", 0
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            if len(head) < keep:
                head += chunk[: keep - len(head)]
            size += len(chunk)
    return StoredRead(
        path=path, size=size, head=head, problem=changed(expected, digest.hexdigest())
    )


def is_file_location(location: str) -> bool:
    """Whether a recorded location is a path (not a `db:` or `s3://` one of another store)."""
    return _SCHEME.match(location) is None


def changed(expected: str | None, found: str) -> str | None:
    """The sentence for content that no longer hashes to `expected`, or None."""
    if expected is None:
        return None
    expected = expected.removeprefix("sha256:")
    if hmac.compare_digest(expected, found):
        return None
    return (
        f"stored result changed since it was validated: expected sha256:{expected}, "
        f"found sha256:{found}"
    )


def _host() -> str:
    return socket.gethostname().replace("/", "_") or "localhost"


def _alive(pid: str) -> bool:
    if not pid.isdigit():
        return True  # not a name this module wrote: leave it
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True
