"""A provider that echoes the bearer token into every field it can: nothing stored or shown
holds it (SQLite and PostgreSQL: database bytes, result files, logs, CLI, agent tools)."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import sqlite3
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from subprocess import PIPE
from typing import Any

import psycopg
import pytest
from aiohttp import web

from jobtrail.agent.tools import AgentTools
from jobtrail.clock import VirtualClock
from jobtrail.core.metrics import render
from jobtrail.core.states import State
from jobtrail.ledger import Ledger
from jobtrail.providers.file.config import ProviderSpec, parse_provider
from jobtrail.services.notify import Notifier, endpoint
from jobtrail.services.runtime import Runtime, runtime
from jobtrail.simulator import Simulator

from cliutil import JOBTRAIL
from harness import SECRET, simulator_doc
from stores import LedgerDb, migrated_ledger

KINDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
# What a truncation could leave of the token is as bad as the token: look for any 16
# characters of it, the run the redactor promises to catch (docs/guarantees/secrets.md).
PIECES = [SECRET[i : i + 16].encode() for i in range(len(SECRET) - 15)]


@dataclass
class Rig:
    sim: Simulator
    rt: Runtime
    spec: ProviderSpec
    db: LedgerDb
    data: Path


@asynccontextmanager
async def rig(kind: str, tmp_path: Path) -> AsyncIterator[Rig]:
    sim = Simulator(token=SECRET)
    spec = parse_provider(simulator_doc(await sim.start()))
    data = tmp_path / "data"
    try:
        async with (
            migrated_ledger(kind, tmp_path) as db,
            runtime(db.url, data, worker_id="worker-1", clock=VirtualClock(), idle_poll=3600) as rt,
        ):
            yield Rig(sim=sim, rt=rt, spec=spec, db=db, data=data)
    finally:
        await sim.close()


async def drive_until_observed(r: Rig, operation_id: str) -> None:
    """Drive one operation by hand until the provider has answered a status read."""
    store, clock = r.rt.ledger.store, r.rt.clock
    for _ in range(10):
        if (await r.rt.ledger.get(operation_id)).state is State.OBSERVING:
            return
        due = await store.next_due()
        assert due is not None
        clock.advance(max(0.0, (due - clock.now()).total_seconds()))  # type: ignore[attr-defined]
        for claim in await store.claim_due("worker-1", clock.now(), 10, timedelta(seconds=60)):
            await r.rt.runner.drive(replace(claim.operation, next_poll_at=claim.was_due))
    raise AssertionError(f"{operation_id} was never observed")


def leaks(blob: bytes) -> list[bytes]:
    return [piece for piece in PIECES if piece in blob]


async def stored_rows(db: LedgerDb) -> bytes:
    """Every row of every table of the ledger, as the database renders it in text."""
    if db.kind == "sqlite":
        conn = sqlite3.connect(db.url)
        try:
            tables = [
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            ]
            rows = [repr(conn.execute(f'SELECT * FROM "{t}"').fetchall()) for t in tables]
        finally:
            conn.close()
        return "\n".join(rows).encode()
    async with await psycopg.AsyncConnection.connect(db.url, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        )
        tables = [r[0] for r in await cur.fetchall()]
        assert "audit_log" in tables or len(tables) > 3, tables
        chunks = []
        for table in tables:
            cur = await conn.execute(f'SELECT t::text FROM "{table}" t'.encode())
            chunks += [r[0] for r in await cur.fetchall()]
    return "\n".join(chunks).encode()


def database_files(db: LedgerDb) -> bytes:
    """The SQLite file with its -wal and -shm, byte for byte (nothing for PostgreSQL)."""
    if db.kind != "sqlite":
        return b""
    files = [Path(db.url + suffix) for suffix in ("", "-wal", "-shm")]
    return b"".join(f.read_bytes() for f in files if f.exists())


def result_files(data: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(data.rglob("*")) if p.is_file())


def cli_output(db: LedgerDb, data: Path, done: str, stopped: str) -> bytes:
    """What `status`, `explain`, `history`, `result` and `list` print, text and --json (run
    side by side: each is a fresh interpreter)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBTRAIL_")}
    env |= {"JOBTRAIL_DB": db.url, "JOBTRAIL_DATA": str(data), "REPORTS_API_TOKEN": SECRET}
    commands = [["list"], ["list", "--json"], ["history", stopped], ["explain", stopped]]
    for command in ("status", "explain", "history", "result"):
        commands += [[command, done], [command, done, "--json"]]
    running = [
        (command, subprocess.Popen([JOBTRAIL, *command], env=env, stdout=PIPE, stderr=PIPE))
        for command in commands
    ]
    out = []
    for command, process in running:
        stdout, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, (command, stderr)
        out += [stdout, stderr]
    return b"\n".join(out)


async def agent_answers(tools: AgentTools, operation_ids: list[str]) -> bytes:
    answers: list[Any] = [await tools.list_jobs(actor="cli:tester")]
    for op_id in operation_ids:
        answers += [
            await tools.get_job(op_id, actor="cli:tester"),
            await tools.explain_job(op_id, actor="cli:tester"),
            await tools.get_result(op_id, actor="cli:tester"),
        ]
    return json.dumps([dataclasses.asdict(a) for a in answers], default=str).encode()


async def notices_posted(ledger: Ledger) -> bytes:
    """Every byte the notifier posts of the ledger's notices (JSON and Slack forms) to a
    receiver on loopback, headers included."""
    got: list[bytes] = []

    async def take(request: web.Request) -> web.Response:
        got.append(repr(dict(request.headers)).encode() + await request.read())
        return web.Response(status=204)

    app = web.Application()
    app.router.add_post("/{name}", take)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    urls = [f"http://{host}:{port}/json", f"slack+http://{host}:{port}/slack"]
    try:
        async with Notifier(ledger, [endpoint(u) for u in urls], sign=None) as n:
            assert await n.deliver_due() == 1
    finally:
        await runner.cleanup()
    assert len(got) == 2
    return b"\n".join(got)


@pytest.mark.parametrize("kind", KINDS)
async def test_an_echoed_bearer_token_is_in_nothing_stored_or_shown(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A provider echoing the token in state words, progress, request ids, error bodies,
    status URLs and result item ids leaves no copy of it in the ledger, files, logs or output."""
    monkeypatch.setenv("REPORTS_API_TOKEN", SECRET)
    caplog.set_level(logging.DEBUG)
    async with rig(kind, tmp_path) as r:
        ledger = r.rt.ledger
        echo = {"echo_credentials": True}
        done = await ledger.submit(
            r.spec, {"account": "a", "_sim": echo | {"failed_items": 1}}, actor="agent"
        )
        stopped = await ledger.submit(
            r.spec, {"account": "b", "_sim": echo | {"duration_polls": 50}}, actor="agent"
        )
        escalated = await ledger.submit(
            r.spec,
            {"account": "c", "_sim": echo | {"cancel": "ignore", "never_finish": True}},
            actor="agent",
            cancel_deadline=timedelta(minutes=5),
        )
        await drive_until_observed(r, stopped.operation_id)
        await drive_until_observed(r, escalated.operation_id)
        await ledger.cancel(stopped.operation_id, actor="alice", reason="not needed")
        await ledger.cancel(escalated.operation_id, actor="alice", reason="too long")
        await r.rt.worker.run(until_idle=True)
        escalated = await ledger.get(escalated.operation_id)
        assert escalated.state is State.CANCELLATION_UNCONFIRMED
        assert "[redacted]" in (escalated.remote_state or "")
        posted = await notices_posted(ledger)
        done, stopped = await ledger.get(done.operation_id), await ledger.get(stopped.operation_id)
        assert (done.state, stopped.state) == (State.SUCCEEDED, State.CANCELLED)
        # The provider did echo, and what it said was kept, redacted.
        assert done.result is not None and done.result.items is not None
        assert done.result.items.failed_refs == ("item-3-[redacted]",)
        assert any(check.startswith("secrets_removed") for check in done.result.checks)
        attempts = await ledger.store.attempts(done.operation_id)
        assert "req_[redacted]" in {a.provider_request_id for a in attempts}
        observed = await ledger.store.observations(done.operation_id)
        assert "running [redacted]" in {o.remote_state for o in observed}
        ids = [done.operation_id, stopped.operation_id]
        shown = {
            "rows": await stored_rows(r.db),
            "files while open": database_files(r.db),
            "agent tools": await agent_answers(AgentTools(ledger, worker_running=False), ids),
            "notices posted": posted,
            "metrics": render(await ledger.metric_counts()).encode(),
        }
    shown |= {
        "files after close": database_files(r.db),
        "rows after close": await stored_rows(r.db) if r.db.kind == "sqlite" else b"",
        "result files": result_files(r.data),
        "logs": "\n".join(json.dumps(rec.__dict__, default=str) for rec in caplog.records).encode(),
    }
    assert b"[redacted]" in shown["rows"] and b"[redacted]" in shown["result files"]
    assert b"[redacted]" in posted and escalated.operation_id.encode() in posted
    assert {where: leaks(blob) for where, blob in shown.items() if leaks(blob)} == {}
