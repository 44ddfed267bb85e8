"""Where results live, chosen by a URL (`--results` or JOBTRAIL_RESULTS):

    (unset), DIR, file:///DIR    content-addressed files (one machine, or a shared mount)
    db:  db:?max_bytes=N         the ledger's own database, chunked, with a size cap
    s3://BUCKET/PREFIX           an S3-compatible object store (`pip install jobtrail[s3]`)

New results go where the URL says; a recorded location names its own store (a path,
`db:sha256/…`, `s3://…`), so results stored before a change of URL still read back. Every
read re-hashes the bytes against the digest in the location (ResultCorrupted otherwise).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from jobtrail.errors import InvalidInput, ResultError
from jobtrail.results.database import DEFAULT_MAX_BYTES, DatabaseResults
from jobtrail.results.files import FileResults
from jobtrail.results.interface import ResultStore

__all__ = ["UNSTORED", "ResultStore", "Results", "open_results"]

# The location recorded for a synchronous result that no store would take: reading it
# fails with the reason, so the operation ends `result_unavailable`.
UNSTORED = "unstored:"


class Results:
    """Writes to the configured store; reads any location from the store it names."""

    def __init__(self, url: str | None, *, data_dir: str | Path, ledger: str) -> None:
        self.url = url or ""
        self.data_dir, self.ledger = Path(data_dir), ledger
        self._opened: dict[str, ResultStore] = {}
        self.target = self._for(_kind(self.url), self.url)

    async def put(self, content: bytes) -> str:
        return await self.target.put(content)

    async def read(self, location: str) -> bytes:
        if location.startswith(UNSTORED):
            raise ResultError(location.removeprefix(UNSTORED).strip())
        return await self._reader(location).read(location)

    async def exists(self, location: str) -> bool:
        if location.startswith(UNSTORED):
            return False
        return await self._reader(location).exists(location)

    async def close(self) -> None:
        for store in self._opened.values():
            await store.close()
        self._opened.clear()

    def _reader(self, location: str) -> ResultStore:
        kind = _kind(location)
        if kind == _kind(self.url):
            return self.target
        # A location from another store: files need no settings; db: is this ledger's;
        # s3:// names its own bucket.
        return self._for(kind, "" if kind == "file" else location)

    def _for(self, kind: str, url: str) -> ResultStore:
        if kind in self._opened:
            return self._opened[kind]
        store: ResultStore
        if kind == "s3":
            try:
                from jobtrail.results.s3 import S3Results
            except ImportError:
                raise InvalidInput(
                    "results in an object store (s3://) need the S3 extra: "
                    "pip install 'jobtrail[s3]'"
                ) from None
            store = S3Results(url)
        elif kind == "db":
            store = DatabaseResults(self.ledger, max_bytes=_max_bytes(url))
        else:
            root = url.removeprefix("file://") if url else ""
            store = FileResults(Path(root) if root else self.data_dir)
        self._opened[kind] = store
        return store


def open_results(url: str | None, *, data_dir: str | Path, ledger: str) -> Results:
    """The result store for `url` (files under `data_dir` when unset); `ledger` is the
    ledger's URL, where `db:` keeps results."""
    return Results(url, data_dir=data_dir, ledger=ledger)


def _kind(url: str) -> str:
    if url.startswith("s3://"):
        return "s3"
    if url == "db" or url.startswith("db:"):
        return "db"
    if "://" in url and not url.startswith("file://"):
        raise InvalidInput(
            f"unknown result store {url!r}; use a directory, file:///DIR, db: or s3://BUCKET/PREFIX"
        )
    return "file"


def _max_bytes(url: str) -> int:
    query = dict(parse_qsl(urlsplit(url).query)) if "?" in url else {}
    raw = query.pop("max_bytes", None)
    if query:
        raise InvalidInput(f"unknown option in {url!r}: {', '.join(query)}; db: takes max_bytes")
    if raw is None:
        return DEFAULT_MAX_BYTES
    if not raw.isdigit() or int(raw) < 1:
        raise InvalidInput(f"max_bytes in {url!r} must be a positive number of bytes")
    return int(raw)
