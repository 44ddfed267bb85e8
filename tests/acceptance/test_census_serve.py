"""`serve --census PROVIDER`: the scheduled census, as a user starts it. At start it takes
a census of the provider, records it in the audit log under `worker:census` and logs what
it found (a second job as an error)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import jobtrail
from census_rig import plant_at
from jobtrail.store import open_store

from cliutil import Workspace, until_healthy
from waits import until_true


def census_entries(db: Path) -> list[dict[str, object]]:
    import asyncio

    async def read() -> list[dict[str, object]]:
        store = await open_store(str(db), create=False)
        try:
            rows = [json.loads(r.entry) for r in await store.audit_rows()]
        finally:
            await store.close()
        return [r for r in rows if r["kind"] == "census.taken"]

    return asyncio.run(read())


def test_serve_takes_a_census_at_start_and_logs_a_second_job(ws: Workspace) -> None:
    """One operation run to its end and a duplicate under its reference: the census serve
    takes is recorded under worker:census, and the duplicate is logged as an error."""
    op = ws.json("submit", "simulator", "--body", '{"account": "a"}')["operation_id"]
    ws.drive(op)
    plant_at(ws.base_url, op)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    src = str(Path(jobtrail.__file__).resolve().parents[1])
    code = "from jobtrail.cli.main import main; main()"
    log = ws.root / "serve.log"
    args = ["serve", "--port", str(port), "--census", "simulator", "--census-every", "1h"]
    with open(log, "wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-c", code, *args],
            stderr=stderr,
            env=ws.env(PYTHONPATH=src),
            cwd=ws.root,
        )
    try:
        until_healthy(f"http://127.0.0.1:{port}", proc, log)
        until_true(lambda: bool(census_entries(ws.db)), 30, "a census recorded by serve")
        (taken,) = census_entries(ws.db)
        assert taken["actor"] == "worker:census"
        assert isinstance(taken["data"], dict) and taken["data"]["counts"]["second_job"] == 1
        until_true(lambda: "A SECOND JOB" in log.read_text(), 30, "the duplicate logged")
        line = next(json.loads(x) for x in log.read_text().splitlines() if "A SECOND JOB" in x)
        assert line["level"] in ("ERROR", "error"), line
    finally:
        proc.terminate()
        proc.wait(timeout=30)
