"""A token command's arguments are never recorded or shown (issue 36): a failing
`["sh", "-c", "curl -d client_secret=… | jq …"]` is explained on every surface by its program
alone. The ledger (its rows and its raw bytes, SQLite and PostgreSQL), `explain`,
`escalation`, `status`, the agent tools, the worker's debug log and `provider check`'s lines
name the program and show none of its arguments.

The provider document itself is stored with each operation as written (the worker drives the
operation by it), so the argument is in that one table and nowhere else: the check below
takes that table out before it reads the rest."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from subprocess import PIPE
from typing import Any

import psycopg
import pytest

from jobtrail.agent.tools import AgentTools
from jobtrail.core.states import State
from jobtrail.presentation.views import operation_view
from jobtrail.providers.file.baseurl import environment
from jobtrail.providers.file.promises import credentials_line
from jobtrail.services.story import read_story

from cliutil import JOBTRAIL
from harness import Harness, harness

CLIENT_SECRET = "cs-7Hq2Lm9Vx4Rt8Kp3-DO-NOT-SHOW"
ARGUMENT = f"curl -s -d client_secret={CLIENT_SECRET} https://login.example | jq -r .t"
PIECES = [CLIENT_SECRET[i : i + 8] for i in range(len(CLIENT_SECRET) - 7)] + ["client_secret"]


def _failing_command(doc: dict[str, Any]) -> None:
    """The provider's token comes from a command that fails, its secret in an argument."""
    code = "import sys; sys.exit(3)"
    doc["auth"] = {
        "header": "Authorization",
        "prefix": "Bearer ",
        "command": [sys.executable, "-c", code, ARGUMENT],
    }


def _leaks(text: str) -> list[str]:
    return [piece for piece in PIECES if piece in text]


async def _rows_but_the_provider_document(h: Harness) -> str:
    """Every stored row's text, the provider documents' table left out; on SQLite, the raw
    bytes of the file too, once that table is emptied and the file vacuumed (no free page
    keeps an old copy)."""
    if h.kind == "sqlite":
        conn = sqlite3.connect(h.db)
        try:  # the ledger is closed: its write-once triggers may go, for this look only
            triggers = conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
            for (name,) in triggers.fetchall():
                conn.execute(f'DROP TRIGGER "{name}"')
            conn.execute("DELETE FROM provider_configs")
            conn.execute("UPDATE operations SET provider_config = ''")
            conn.commit()
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.execute("VACUUM")
        finally:
            conn.close()
        files = [Path(h.db + suffix) for suffix in ("", "-wal", "-shm")]
        return b"".join(f.read_bytes() for f in files if f.exists()).decode("latin-1")
    async with await psycopg.AsyncConnection.connect(h.db, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        )
        tables = [r[0] for r in await cur.fetchall() if r[0] != "provider_configs"]
        chunks = []
        for table in tables:
            cur = await conn.execute(f'SELECT t::text FROM "{table}" t'.encode())
            chunks += [r[0] for r in await cur.fetchall()]
    return "\n".join(chunks)


def _cli(h: Harness, operation_id: str) -> str:
    """What `status`, `explain` and `escalation` print (text and --json), side by side."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBTRAIL_")}
    env |= {"JOBTRAIL_DB": h.db, "JOBTRAIL_DATA": str(h.data)}
    commands = [
        [command, operation_id, *extra]
        for command in ("status", "explain", "escalation")
        for extra in ([], ["--json"])
    ]
    running = [
        (command, subprocess.Popen([JOBTRAIL, *command], env=env, stdout=PIPE, stderr=PIPE))
        for command in commands
    ]
    out = []
    for command, process in running:
        stdout, stderr = process.communicate(timeout=120)
        assert process.returncode in (0, 1), (command, stderr)
        out += [stdout.decode(), stderr.decode()]
    return "\n".join(out)


async def test_a_failing_token_command_is_explained_by_its_program_alone(
    store_kind: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The create cannot be sent (the command fails); every explanation of that names the
    program, and no copy of its arguments is stored or shown anywhere."""
    caplog.set_level(logging.DEBUG)
    async with harness(tmp_path, edit=_failing_command, kind=store_kind) as h:
        op = await h.submit({"report": "monthly"}, actor="agent:reports")
        for _ in range(4):
            if not await h.tick():
                break
        op = await h.op(op)
        assert op.state is State.CREATE_PENDING  # nothing was sent: no token
        ledger = h.rt.ledger
        story = await read_story(ledger, op)
        tools = AgentTools(ledger, worker_running=False)
        answers = [
            await tools.get_job(op.operation_id, actor="cli:tester"),
            await tools.explain_job(op.operation_id, actor="cli:tester"),
            await tools.list_jobs(actor="cli:tester"),
        ]
        attempts = await ledger.attempts(op.operation_id)
        shown = {
            "explain": story.text(),
            "escalation": json.dumps(story.escalation(), default=str),
            "status": json.dumps(
                operation_view(
                    op,
                    ledger.now(),
                    attempts=attempts,
                    observations=await ledger.observations(op.operation_id),
                ).json(),
                default=str,
            ),
            "agent tools": json.dumps([dataclasses.asdict(a) for a in answers], default=str),
            "provider check": "\n".join([credentials_line(h.spec), *environment(h.spec)]),
        }
    shown["worker log"] = "\n".join(json.dumps(r.__dict__, default=str) for r in caplog.records)
    shown["cli"] = _cli(h, op.operation_id)
    shown["ledger"] = await _rows_but_the_provider_document(h)
    assert {where: _leaks(text) for where, text in shown.items() if _leaks(text)} == {}
    program = f"`{sys.executable}`"
    assert program in shown["explain"] and program in shown["provider check"]
    assert any(program in (a.detail or {}).get("error", "") for a in attempts), attempts
