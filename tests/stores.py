"""Real, empty ledgers for tests: a SQLite file in the test's tmp_path, or a fresh schema on
the PostgreSQL server named by JOBTRAIL_TEST_PG (default postgresql://postgres@127.0.0.1:5432/
postgres), dropped afterwards.

When that server cannot be reached, PostgreSQL tests are skipped with a loud reason, or fail
when JOBTRAIL_REQUIRE_PG=1 (as in CI).
"""

from __future__ import annotations

import functools
import os
import re
import sqlite3
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import psycopg
import pytest

import wirecheck
from jobtrail.store import Store, open_store

PG_DEFAULT = "postgresql://postgres@127.0.0.1:5432/postgres"
KINDS = ("sqlite", "postgres")
# What a raw connection raises when the database refuses a statement.
RAW_ERRORS = (sqlite3.Error, psycopg.Error)


def pg_url() -> str:
    return os.environ.get("JOBTRAIL_TEST_PG", PG_DEFAULT)


def shown(url: str) -> str:
    """The URL as it may appear in a message: any password replaced by [redacted]."""
    return re.sub(r"(//[^/@:]*:)[^@/]*@", r"\1[redacted]@", url)


@functools.cache
def pg_problem() -> str | None:
    """Why the test server cannot be used, or None when it can (asked once per session)."""
    try:
        with psycopg.connect(pg_url(), connect_timeout=3, autocommit=True) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        return " ".join(str(exc).split())
    return None


def require_postgres() -> None:
    """Skip the calling test (fail it, under JOBTRAIL_REQUIRE_PG=1) without a server."""
    problem = pg_problem()
    if problem is None:
        return
    message = f"PostgreSQL not reachable at {shown(pg_url())}; set JOBTRAIL_TEST_PG ({problem})"
    if os.environ.get("JOBTRAIL_REQUIRE_PG") == "1":
        pytest.fail(f"{message}; JOBTRAIL_REQUIRE_PG=1 makes this a failure", pytrace=False)
    pytest.skip(message)


def with_search_path(url: str, schema: str) -> str:
    """`url` with its connections' search_path set to `schema` (libpq `options`)."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    query["options"] = f"{query.get('options', '')} -c search_path={schema}".strip()
    return urlunsplit(parts._replace(query=urlencode(query, quote_via=quote)))


@dataclass(frozen=True)
class LedgerDb:
    """An empty ledger database of one kind; `url` is what `open_store` takes."""

    kind: str
    url: str

    async def open(self, *, audit_key: bytes | None = None) -> Store:
        return await open_store(self.url, audit_key=audit_key)

    @asynccontextmanager
    async def opened(self, *, audit_key: bytes | None = None) -> AsyncIterator[Store]:
        store = await self.open(audit_key=audit_key)
        try:
            yield store
        finally:
            await store.close()

    async def raw_execute(self, sql: str) -> None:
        """Run one statement on a plain connection, outside the store; RAW_ERRORS if refused."""
        wirecheck.FORGED.add(self.url)  # a rewritten ledger: the wire check leaves it alone
        if self.kind == "sqlite":
            conn = sqlite3.connect(self.url, isolation_level=None)
            try:
                conn.execute(sql)
            finally:
                conn.close()
            return
        async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as pg:
            await pg.execute(sql.encode())


@asynccontextmanager
async def fresh_ledger(kind: str, tmp_path: Path) -> AsyncIterator[LedgerDb]:
    """A new, empty ledger database (not yet migrated), removed afterwards."""
    if kind == "sqlite":
        yield LedgerDb(kind, str(tmp_path / "ledger.db"))
        await wirecheck.snapshot(str(tmp_path / "ledger.db"))  # read by the wire check
        return
    if kind != "postgres":
        raise ValueError(f"unknown store kind {kind!r}; expected one of {KINDS}")
    require_postgres()
    schema = f"jobtrail_test_{uuid.uuid4().hex[:16]}"
    async with await psycopg.AsyncConnection.connect(pg_url(), autocommit=True) as admin:
        await admin.execute(f"CREATE SCHEMA {schema}".encode())
        url = with_search_path(pg_url(), schema)
        try:
            yield LedgerDb(kind, url)
        finally:
            with suppress(Exception):  # the wire check reads it first (a ledger never opened: no)
                await wirecheck.snapshot(url)
            await admin.execute(f"DROP SCHEMA {schema} CASCADE".encode())


@asynccontextmanager
async def open_test_store(
    kind: str, tmp_path: Path, *, audit_key: bytes | None = None
) -> AsyncIterator[Store]:
    """An opened (migrated) store on a fresh ledger of `kind`, closed and removed after."""
    async with fresh_ledger(kind, tmp_path) as db, db.opened(audit_key=audit_key) as store:
        yield store
