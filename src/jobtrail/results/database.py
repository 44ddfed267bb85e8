"""Results in the ledger's own database (`--results db:`): every machine that reaches the
ledger reaches the results, with no shared filesystem and no object store to run.

A result is one `result_blobs` row and its bytes in `result_chunks` rows of at most 1 MiB
(migration 0005), written in one transaction: a reader sees all of a result or none of it.
Databases are poor homes for large files, so the store refuses results over a cap
(`db:?max_bytes=N`, 64 MiB by default) with ResultTooLarge, before writing anything.

The location is `db:sha256/<digest>`: it names no host, so it reads the same from every
machine pointed at this ledger."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from typing import TYPE_CHECKING, Any

from jobtrail.errors import ResultError, ResultTooLarge
from jobtrail.results.interface import checked, digest_in, digest_of

if TYPE_CHECKING:
    import psycopg

CHUNK_BYTES = 1024 * 1024
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
PREFIX = "db:sha256/"
BUSY_TIMEOUT_MS = 10_000

# One statement set, written with `?`; PostgreSQL's driver wants `%s`.
INSERT_BLOB = (
    "INSERT INTO result_blobs (digest, size, chunks) VALUES (?, ?, ?) "
    "ON CONFLICT (digest) DO NOTHING"
)
INSERT_CHUNK = "INSERT INTO result_chunks (digest, seq, data) VALUES (?, ?, ?)"
SELECT_BLOB = "SELECT chunks FROM result_blobs WHERE digest = ?"
SELECT_CHUNKS = "SELECT data FROM result_chunks WHERE digest = ? ORDER BY seq"


def _pg(sql: str) -> bytes:
    return sql.replace("?", "%s").encode()


class DatabaseResults:
    def __init__(self, ledger: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.ledger, self.max_bytes = ledger, max_bytes
        self._postgres = ledger.startswith(("postgresql://", "postgres://"))
        self._pg_conn: psycopg.AsyncConnection[Any] | None = None
        self._sqlite: sqlite3.Connection | None = None
        # One connection per store, used by one caller at a time.
        self._pg_lock = asyncio.Lock()
        self._sqlite_lock = threading.Lock()

    async def put(self, content: bytes) -> str:
        if len(content) > self.max_bytes:
            raise ResultTooLarge(
                f"the result is {len(content)} bytes, more than the {self.max_bytes} the "
                "database result store accepts; raise the cap (--results "
                f"'db:?max_bytes={len(content)}') or keep results in files or an object store "
                "(--results DIR or s3://BUCKET/PREFIX)"
            )
        digest = digest_of(content)
        chunks = [content[i : i + CHUNK_BYTES] for i in range(0, len(content), CHUNK_BYTES)]
        if self._postgres:
            await self._pg_put(digest, len(content), chunks)
        else:
            await asyncio.to_thread(self._sqlite_put, digest, len(content), chunks)
        return PREFIX + digest

    async def read(self, location: str) -> bytes:
        digest = _digest(location)
        if self._postgres:
            parts = await self._pg_read(digest)
        else:
            parts = await asyncio.to_thread(self._sqlite_read, digest)
        if parts is None:
            raise ResultError(
                f"no result sha256:{digest} is stored in the ledger database {_shown(self)}; "
                "check that this command uses the same ledger (--db) as the worker that stored it"
            )
        return checked(location, b"".join(parts))

    async def exists(self, location: str) -> bool:
        digest = _digest(location)
        if self._postgres:
            async with self._pg_lock:
                conn = await self._pg()
                cur = await conn.execute(_pg(SELECT_BLOB), (digest,))
                found = await cur.fetchone() is not None
                await conn.commit()
                return found
        return await asyncio.to_thread(self._sqlite_exists, digest)

    async def close(self) -> None:
        if self._pg_conn is not None:
            await self._pg_conn.close()
            self._pg_conn = None
        if self._sqlite is not None:
            self._sqlite.close()
            self._sqlite = None

    # -- PostgreSQL ------------------------------------------------------------------------

    async def _pg(self) -> psycopg.AsyncConnection[Any]:
        if self._pg_conn is None or self._pg_conn.closed:
            import psycopg

            try:
                self._pg_conn = await psycopg.AsyncConnection.connect(self.ledger)
            except psycopg.Error as exc:
                raise ResultError(f"cannot reach the result database: {exc}") from None
        return self._pg_conn

    async def _pg_put(self, digest: str, size: int, chunks: list[bytes]) -> None:
        import psycopg

        async with self._pg_lock:
            conn = await self._pg()
            try:
                async with conn.transaction():
                    cur = await conn.execute(_pg(INSERT_BLOB), (digest, size, len(chunks)))
                    if cur.rowcount:  # else: stored before (same content), nothing to add
                        async with conn.cursor() as many:
                            await many.executemany(
                                _pg(INSERT_CHUNK), [(digest, i, c) for i, c in enumerate(chunks)]
                            )
            except psycopg.Error as exc:
                raise ResultError(f"the database refused to store the result: {exc}") from None

    async def _pg_read(self, digest: str) -> list[bytes] | None:
        import psycopg

        async with self._pg_lock:
            conn = await self._pg()
            try:
                async with conn.transaction():
                    cur = await conn.execute(_pg(SELECT_BLOB), (digest,))
                    if await cur.fetchone() is None:
                        return None
                    cur = await conn.execute(_pg(SELECT_CHUNKS), (digest,))
                    return [bytes(row[0]) for row in await cur.fetchall()]
            except psycopg.Error as exc:
                raise ResultError(f"the result cannot be read from the database: {exc}") from None

    # -- SQLite (runs in a thread) ---------------------------------------------------------

    def _sqlite_conn(self) -> sqlite3.Connection:
        if self._sqlite is None:
            conn = sqlite3.connect(self.ledger, isolation_level=None, check_same_thread=False)
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA synchronous = FULL")  # stored means stored, as for files
            conn.execute("PRAGMA foreign_keys = ON")
            self._sqlite = conn
        return self._sqlite

    def _sqlite_put(self, digest: str, size: int, chunks: list[bytes]) -> None:
        with self._sqlite_lock:
            conn = self._sqlite_conn()
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    if conn.execute(INSERT_BLOB, (digest, size, len(chunks))).rowcount:
                        conn.executemany(
                            INSERT_CHUNK, [(digest, i, c) for i, c in enumerate(chunks)]
                        )
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise ResultError(f"the database refused to store the result: {exc}") from None

    def _sqlite_read(self, digest: str) -> list[bytes] | None:
        with self._sqlite_lock:
            conn = self._sqlite_conn()
            try:
                conn.execute("BEGIN")
                try:
                    if conn.execute(SELECT_BLOB, (digest,)).fetchone() is None:
                        return None
                    return [_bytes(row[0]) for row in conn.execute(SELECT_CHUNKS, (digest,))]
                finally:
                    conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise ResultError(f"the result cannot be read from the database: {exc}") from None

    def _sqlite_exists(self, digest: str) -> bool:
        with self._sqlite_lock:
            try:
                row = self._sqlite_conn().execute(SELECT_BLOB, (digest,)).fetchone()
            except sqlite3.Error as exc:
                raise ResultError(f"the result cannot be read from the database: {exc}") from None
            return row is not None


def _bytes(value: bytes | memoryview | str) -> bytes:
    # SQLite stores what it is given: a chunk edited by hand may come back as text, and
    # must still reach the hash check rather than crash the reader.
    if isinstance(value, str):
        return value.encode("utf-8")
    return bytes(value)


def _digest(location: str) -> str:
    if not location.startswith(PREFIX):
        raise ResultError(f"{location!r} is not a database result location ({PREFIX}<digest>)")
    return digest_in(location)


def _shown(store: DatabaseResults) -> str:
    """The ledger's name without any password, for messages."""
    if not store._postgres:
        return store.ledger
    from urllib.parse import urlsplit

    parts = urlsplit(store.ledger)
    return f"{parts.scheme}://{parts.hostname or ''}{parts.path}"
