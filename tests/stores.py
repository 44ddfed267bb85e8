"""Real ledgers for tests: a SQLite file in the test's tmp_path, or a fresh schema on the
PostgreSQL server named by JOBTRAIL_TEST_PG (default postgresql://postgres@127.0.0.1:5432/
postgres), dropped afterwards.

`fresh_ledger` gives an empty one (the migrations' own tests start there); `migrated_ledger`
one already migrated, copied from a template migrated once per session (procrastinate's
template database): for SQLite the migrated file copied, for PostgreSQL the migrated
template schema's pg_dump replayed into the new schema in one transaction (about a quarter
of the migrations' cost; CREATE DATABASE ... TEMPLATE measured slower here). Without
pg_dump (or with one that will not dump this server) the new schema is migrated instead.
tests/contract/test_ledger_template.py holds the copy to what the migrations make.

When that server cannot be reached, PostgreSQL tests are skipped with a loud reason, or fail
when JOBTRAIL_REQUIRE_PG=1 (as in CI).
"""

from __future__ import annotations

import atexit
import functools
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile
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
    """An opened store on a new, migrated ledger of `kind`, closed and removed after."""
    async with migrated_ledger(kind, tmp_path) as db, db.opened(audit_key=audit_key) as store:
        yield store


@asynccontextmanager
async def migrated_ledger(kind: str, tmp_path: Path) -> AsyncIterator[LedgerDb]:
    """A new ledger database already migrated (a copy of the session's template), removed
    afterwards: what `open_store` makes of an empty one, without replaying the migrations."""
    if kind == "sqlite":
        target = tmp_path / "ledger.db"
        shutil.copyfile(await _sqlite_template(), target)
        yield LedgerDb(kind, str(target))
        return
    if kind != "postgres":
        raise ValueError(f"unknown store kind {kind!r}; expected one of {KINDS}")
    require_postgres()
    script = await _pg_template_script()
    if script is None:  # no usable pg_dump: migrate the new schema instead
        async with fresh_ledger(kind, tmp_path) as db:
            await (await db.open()).close()
            yield db
        return
    schema = f"jobtrail_test_{uuid.uuid4().hex[:16]}"
    async with await psycopg.AsyncConnection.connect(pg_url(), autocommit=True) as admin:
        async with admin.transaction():
            await admin.execute(script.replace(_PLACEHOLDER, schema).encode())
        try:
            yield LedgerDb(kind, with_search_path(pg_url(), schema))
        finally:
            await admin.execute(f"DROP SCHEMA {schema} CASCADE".encode())


_templates: dict[str, str | None] = {}  # per process: the SQLite file, the PostgreSQL script
_PLACEHOLDER = "jobtrail_template_schema_placeholder"


async def _sqlite_template() -> str:
    """The migrated SQLite ledger this process copies (made on first use, in a temporary
    folder removed at exit)."""
    if "sqlite" not in _templates:
        folder = tempfile.mkdtemp(prefix="jobtrail-template-")
        atexit.register(shutil.rmtree, folder, True)
        path = str(Path(folder) / "ledger.db")
        await (await open_store(path)).close()  # the last close checkpoints: one file
        _templates["sqlite"] = path
    found = _templates["sqlite"]
    assert found is not None
    return found


async def _pg_template_script() -> str | None:
    """SQL that makes a schema named _PLACEHOLDER as the migrations leave a new ledger
    (tables, triggers, functions and rows), or None without a pg_dump that can dump it.
    Made once per process from a template schema migrated by `open_store`, then dropped."""
    if "postgres" in _templates:
        return _templates["postgres"]
    template = f"jobtrail_template_{uuid.uuid4().hex[:16]}"
    async with await psycopg.AsyncConnection.connect(pg_url(), autocommit=True) as admin:
        await admin.execute(f"CREATE SCHEMA {template}".encode())
        try:
            await (await open_store(with_search_path(pg_url(), template))).close()
            dumped = _pg_dump(template)
        finally:
            await admin.execute(f"DROP SCHEMA {template} CASCADE".encode())
    script = None if dumped is None else _localized(dumped, template)
    _templates["postgres"] = script
    return script


def _pg_dump(schema: str) -> str | None:
    try:
        done = subprocess.run(
            [
                *("pg_dump", "--dbname", pg_url(), "--schema", schema, "--inserts"),
                *("--no-owner", "--no-privileges", "--no-comments"),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 and schema in done.stdout else None


def _localized(dump: str, template: str) -> str:
    """The dump as statements for one transaction: its settings made local to it, psql's
    meta-commands (`\\restrict`) left out, the template's name replaced by the placeholder."""
    lines = []
    for line in dump.splitlines():
        if line.startswith("\\"):
            continue
        if line.startswith("SET "):
            line = "SET LOCAL " + line[len("SET ") :]
        elif line.startswith("SELECT pg_catalog.set_config("):
            line = line.replace(", false);", ", true);")
        lines.append(line)
    text = "\n".join(lines)
    return re.sub(rf"\b{template}\b", _PLACEHOLDER, text)
