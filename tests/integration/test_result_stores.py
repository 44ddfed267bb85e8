"""Result stores chosen by URL (files, the ledger's database, an S3-compatible object store),
each under a real worker on a SQLite and a PostgreSQL ledger: results come back whole,
changed bytes are caught on read, and the database's cap ends an operation cleanly."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import boto3
import psycopg
import pytest

from jobtrail.agent.tools import AgentTools
from jobtrail.core.states import State
from jobtrail.errors import ResultCorrupted

from harness import Harness, harness
from stores import require_postgres

BUCKET = "jobtrail-results"
LEDGERS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
STORES = ["files", "db", "s3"]


def _url(store: str, tmp_path: Path) -> str | None:
    return {"files": None, "db": "db:", "s3": f"s3://{BUCKET}/{tmp_path.name}"}[store]


@asynccontextmanager
async def rig(
    ledger: str, results: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Harness]:
    """The simulator, a fresh ledger of kind `ledger` and a worker storing into `results`."""
    async with harness(tmp_path, monkeypatch=monkeypatch, kind=ledger, results=results) as h:
        yield h


async def _collected(h: Harness) -> tuple[str, str]:
    """Submit one job, drive it to the end; (its result location, recorded sha256)."""
    op = await h.until(await h.submit({"account": "acct_1", "format": "csv"}), State.SUCCEEDED)
    assert op.result is not None and op.result.location and op.result.sha256
    return op.result.location, op.result.sha256


async def _tamper(h: Harness, location: str) -> None:
    """Change one stored byte behind the store's back, where that store keeps it."""
    if location.startswith("s3://"):
        bucket, key = location.removeprefix("s3://").split("/", 1)
        client = boto3.client("s3")
        content = client.get_object(Bucket=bucket, Key=key)["Body"].read()
        client.put_object(Bucket=bucket, Key=key, Body=b"X" + content[1:])
    elif location.startswith("db:"):
        digest = location.rsplit("/", 1)[-1]
        change = "UPDATE result_chunks SET data = data || ? WHERE digest = ? AND seq = 0"
        url = h.rt.results.ledger
        if url.startswith("postgresql"):
            async with await psycopg.AsyncConnection.connect(url, autocommit=True) as pg:
                await pg.execute(change.replace("?", "%s").encode(), (b"!", digest))
        else:
            conn = sqlite3.connect(url, isolation_level=None)
            try:
                conn.execute(change, (b"!", digest))
            finally:
                conn.close()
    else:
        path = Path(location)
        path.write_bytes(b"X" + path.read_bytes()[1:])


@pytest.mark.parametrize("ledger", LEDGERS)
@pytest.mark.parametrize("store", STORES)
async def test_a_result_is_stored_and_read_back_through_each_store(
    ledger: str, store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: Any
) -> None:
    """A job's result, stored by the worker in the chosen store, reads back byte for byte."""
    if store == "s3":
        request.getfixturevalue("s3_env")
    async with rig(ledger, _url(store, tmp_path), tmp_path, monkeypatch) as h:
        location, sha256 = await _collected(h)
        expected_prefix = {"files": str(tmp_path / "data"), "db": "db:sha256/", "s3": "s3://"}
        assert location.startswith(expected_prefix[store])
        content = await h.rt.results.read(location)
        assert f"sha256:{hashlib.sha256(content).hexdigest()}" in (sha256, f"sha256:{sha256}")
        assert await h.rt.results.exists(location)


@pytest.mark.parametrize("ledger", LEDGERS)
@pytest.mark.parametrize("store", STORES)
async def test_a_changed_stored_result_is_caught_on_read(
    ledger: str, store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: Any
) -> None:
    """Bytes altered in the file, the database row or the S3 object fail the hash check."""
    if store == "s3":
        request.getfixturevalue("s3_env")
    async with rig(ledger, _url(store, tmp_path), tmp_path, monkeypatch) as h:
        location, _ = await _collected(h)
        await _tamper(h, location)
        with pytest.raises(ResultCorrupted, match="changed after it was stored"):
            await h.rt.results.read(location)


@pytest.mark.parametrize("ledger", LEDGERS)
async def test_the_database_cap_ends_the_operation_result_unavailable(
    ledger: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A result over the database store's cap is refused with a clear reason, and the
    operation ends result_unavailable instead of crashing the worker."""
    if ledger == "postgres":
        require_postgres()
    async with rig(ledger, "db:?max_bytes=16", tmp_path, monkeypatch) as h:
        op = await h.until(
            await h.submit({"account": "acct_1", "format": "csv"}),
            State.RESULT_UNAVAILABLE,
            State.SUCCEEDED,
        )
        assert op.state is State.RESULT_UNAVAILABLE
        attempts = await h.rt.ledger.store.attempts(op.operation_id)
        reasons = " ".join(str(a.detail) for a in attempts)
        assert "more than the 16 the database result store accepts" in reasons


async def test_an_agent_reads_a_result_kept_in_the_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """get_result returns the content of a result stored in the database, not a file error."""
    async with rig("sqlite", "db:", tmp_path, monkeypatch) as h:
        location, _ = await _collected(h)
        op_id = (await h.rt.ledger.store.list_operations(states=[], limit=1))[0].operation_id
        view = await AgentTools(h.rt.ledger, worker_running=False, results=h.rt.results).get_result(
            op_id, actor="cli:tester"
        )
        assert view.location == location
        assert view.content == (await h.rt.results.read(location)).decode()


async def test_an_oversize_synchronous_result_ends_result_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A result returned by the create call itself and refused by the cap still records the
    job, then ends the operation result_unavailable with the cap's reason."""
    async with rig("sqlite", "db:?max_bytes=16", tmp_path, monkeypatch) as h:
        body = {"account": "acct_1", "_sim": {"sync_result": True}}
        op = await h.until(await h.submit(body), State.RESULT_UNAVAILABLE, State.SUCCEEDED)
        assert op.state is State.RESULT_UNAVAILABLE
        assert op.remote_job_id is not None
        attempts = await h.rt.ledger.store.attempts(op.operation_id)
        assert "more than the 16" in " ".join(str(a.detail) for a in attempts)
