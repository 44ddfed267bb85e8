"""Results bound to the audit (issue 19): the stored result's sha256 and size are in the
audit entry of the transition that collected it, so a result planted in the record (another
stored object, its digest and size to match) is refused by `audit verify --replay` and by
every read; and `jobtrail result` re-hashes what the database or the object store holds, so a
corrupted chunk, an overwritten object or a missing one is never shown as valid."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import boto3
import psycopg
import pytest

from jobtrail.agent.tools import AgentTools
from jobtrail.client.result import read_result
from jobtrail.core.model import Operation
from jobtrail.core.states import State
from jobtrail.store.codec import dump, result_doc

from cliutil import JOBTRAIL
from harness import Harness, harness

BUCKET = "jobtrail-results"


def _url(store: str, tmp_path: Path) -> str | None:
    return {"files": None, "db": "db:", "s3": f"s3://{BUCKET}/{tmp_path.name}"}[store]


async def _collected(h: Harness) -> Operation:
    op = await h.until(await h.submit({"account": "acct_1", "format": "csv"}), State.SUCCEEDED)
    assert op.result is not None and op.result.location and op.result.sha256
    return op


async def _sql(h: Harness, statement: str, *args: Any) -> None:
    """One statement on the ledger's database, behind jobtrail's back (`?` placeholders)."""
    if h.db.startswith("postgresql"):
        async with await psycopg.AsyncConnection.connect(h.db, autocommit=True) as pg:
            await pg.execute(statement.replace("?", "%s").encode(), args)
        return
    conn = sqlite3.connect(h.db, isolation_level=None)
    try:
        conn.execute(statement, args)
    finally:
        conn.close()


def _cli(h: Harness, tmp_path: Path, results: str | None, *args: str) -> Any:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBTRAIL_")}
    env |= {"JOBTRAIL_DB": h.db, "JOBTRAIL_DATA": str(h.data)}
    if results:
        env["JOBTRAIL_RESULTS"] = results
    return subprocess.run(
        [JOBTRAIL, *args], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path
    )


async def _break(h: Harness, location: str, how: str) -> None:
    """Change or remove the stored bytes where their store keeps them."""
    if location.startswith("s3://"):
        bucket, key = location.removeprefix("s3://").split("/", 1)
        client = boto3.client("s3")
        if how == "missing":
            client.delete_object(Bucket=bucket, Key=key)
        else:
            client.put_object(Bucket=bucket, Key=key, Body=b"overwritten,with,other,rows\n")
        return
    digest = location.rsplit("/", 1)[-1]
    if how == "missing":
        await _sql(h, "DELETE FROM result_chunks WHERE digest = ?", digest)
    else:
        await _sql(
            h, "UPDATE result_chunks SET data = ? WHERE digest = ? AND seq = 0", b"x", digest
        )


@pytest.mark.slow  # S3 client retries on a missing object, in real time
@pytest.mark.parametrize(
    ("store", "how"),
    [("db", "changed"), ("db", "missing"), ("s3", "changed"), ("s3", "missing")],
    ids=["db-corrupted-chunk", "db-missing", "s3-overwritten", "s3-missing"],
)
async def test_jobtrail_result_rehashes_database_and_object_store_content(
    store_kind: str,
    store: str,
    how: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: Any,
) -> None:
    """`jobtrail result` reads back a db: or s3:// result and hashes it again: intact, it is
    valid with exit 0; corrupted, overwritten or gone, it is not valid and exits 1, in the
    table and in --json."""
    if store == "s3":
        request.getfixturevalue("s3_env")
    results = _url(store, tmp_path)
    async with harness(tmp_path, monkeypatch=monkeypatch, kind=store_kind, results=results) as h:
        op = await _collected(h)
        assert op.result is not None and op.result.location
        intact = _cli(h, tmp_path, results, "result", op.operation_id, "--json")
        assert intact.returncode == 0, intact.stderr
        assert json.loads(intact.stdout)["result"]["valid"] is True
        await _break(h, op.result.location, how)
        shown = _cli(h, tmp_path, results, "result", op.operation_id)
        assert shown.returncode == 1, shown.stdout + shown.stderr
        assert "valid" in shown.stdout and "False" in shown.stdout.replace("false", "False")
        as_json = _cli(h, tmp_path, results, "result", op.operation_id, "--json")
        assert as_json.returncode == 1
        document = json.loads(as_json.stdout)["result"]
        assert document["valid"] is False and document["problems"], document


async def test_a_planted_result_is_refused_by_replay_and_every_read(
    store_kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another object stored and the record pointed at it (digest and size to match): the
    audit log holds the collected result's digest and size, so `audit verify --replay`
    names the operation, and `jobtrail result`, the Python client and the agent tools all
    say it is not the result that was collected, serving none of it."""
    async with harness(tmp_path, monkeypatch=monkeypatch, kind=store_kind) as h:
        op = await _collected(h)
        assert op.result is not None
        entries = [json.loads(r.entry) for r in await h.rt.ledger.store.audit_rows(op.operation_id)]
        (bound,) = [
            e["data"]["result"]
            for e in entries
            if e["kind"] == "transition" and "result" in e["data"]
        ]
        assert bound == {"sha256": op.result.sha256, "size": op.result.size}
        planted = b"id,amount\nplanted,1000000\n"
        location = await h.rt.results.put(planted)
        forged = replace(
            op.result,
            location=location,
            sha256=hashlib.sha256(planted).hexdigest(),
            size=len(planted),
        )
        await _sql(
            h,
            "UPDATE operations SET result = ? WHERE operation_id = ?",
            dump(result_doc(forged)),
            op.operation_id,
        )
        replayed = _cli(h, tmp_path, None, "audit", "verify", "--replay")
        assert replayed.returncode == 1
        assert f"operation forged: {op.operation_id}" in replayed.stdout
        assert "result" in replayed.stdout
        shown = _cli(h, tmp_path, None, "result", op.operation_id, "--json")
        assert shown.returncode == 1
        document = json.loads(shown.stdout)["result"]
        assert document["valid"] is False
        assert any("audit log" in p for p in document["problems"]), document
        stored = await h.rt.ledger.get(op.operation_id)
        client_view = await read_result(stored, h.rt.results, h.data, ledger=h.rt.ledger)
        assert client_view.valid is False and client_view.content is None
        assert client_view.path is None
        agent = AgentTools(h.rt.ledger, worker_running=False, results=h.rt.results)
        view = await agent.get_result(op.operation_id, actor="cli:tester")
        assert view.valid is False and view.content is None
        assert any("audit log" in p for p in view.problems)
