"""Mistakes a person (or an agent) makes are answered in one sentence, never a traceback:
a body file that is not UTF-8, `--body @` with no file, a duration past any sensible
deadline, a body over the documented cap, and an MCP call missing an argument. The body is
stored once: the audit entry holds its fingerprint and size, and the chain still verifies."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from mcp import Client, StdioServerParameters
from mcp.types import Implementation

from cliutil import JOBTRAIL, Workspace


def _one_sentence(ws: Workspace, *args: str) -> str:
    done = ws.run(*args, check=False)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "Traceback" not in done.stderr and "unexpected" not in done.stderr
    return lines[0]


def test_body_and_duration_mistakes_are_one_sentence(ws: Workspace) -> None:
    """Invalid UTF-8, a bare @, 99999999d and a 2 MiB body each get one `error:` line."""
    (ws.root / "latin1.json").write_bytes('{"account": "café"}'.encode("latin-1"))
    line = _one_sentence(ws, "submit", "simulator", "--body", "@latin1.json")
    assert "not UTF-8" in line and "latin1.json" in line
    line = _one_sentence(ws, "submit", "simulator", "--body", "@")
    assert "file name" in line
    body = '{"account": "a"}'
    line = _one_sentence(
        ws, "submit", "simulator", "--body", body, "--result-deadline", "99999999d"
    )
    assert "too long" in line and "3650d" in line
    big = json.dumps({"account": "a", "blob": "x" * (2 * 1024 * 1024)})
    (ws.root / "big.json").write_text(big, encoding="utf-8")
    line = _one_sentence(ws, "submit", "simulator", "--body", "@big.json")
    assert "1 MiB" in line
    listed = json.loads(ws.run("list", "--json").stdout)
    assert listed["operations"] == [] and listed["total"] == 0  # nothing was recorded


def test_the_request_body_is_stored_once(ws: Workspace) -> None:
    """The operation row holds the body; its audit entry holds fingerprint and size only,
    and `audit verify --replay` still catches an edited body."""
    marker = "only-in-the-operation-row"
    op = ws.json("submit", "simulator", "--body", json.dumps({"account": marker}))
    with sqlite3.connect(ws.db) as db:
        entries = [row[0] for row in db.execute("SELECT entry FROM audit_log")]
    submitted = [json.loads(e) for e in entries if "operation.submitted" in e]
    assert submitted and marker not in "".join(entries)
    data = submitted[0]["data"]
    assert data["fingerprint"] == op["request_fingerprint"] and data["body_bytes"] > 0
    assert ws.json("audit", "verify")["ok"] is True
    assert marker in json.dumps(ws.json("explain", op["operation_id"])["request_body"])
    with sqlite3.connect(ws.db) as db:  # the row's body is still bound by the chain
        db.execute("UPDATE operations SET request = replace(request, ?, 'forged')", (marker,))
    verdict = ws.run("audit", "verify", "--replay", "--json", check=False)
    assert verdict.returncode == 1
    (forged,) = json.loads(verdict.stdout)["forged"]
    assert forged["operation_id"] == op["operation_id"] and "forged request" in forged["problem"]


async def test_an_mcp_call_missing_an_argument_is_one_sentence(ws: Workspace) -> None:
    """get_job without operation_id answers one sentence naming the missing argument."""
    params = StdioServerParameters(
        command=JOBTRAIL,
        args=["--db", str(ws.db), "mcp", "--no-worker"],
        env=ws.env(),
        cwd=Path(ws.root),
    )
    info = Implementation(name="person-test", version="1.0")
    async with Client(params, client_info=info) as client:
        result = await client.call_tool("get_job", {})
    assert result.is_error
    (block,) = result.content
    text: str = getattr(block, "text", "")
    assert "missing the argument operation_id" in text
    assert "\n" not in text.strip() and "pydantic" not in text and "Traceback" not in text
