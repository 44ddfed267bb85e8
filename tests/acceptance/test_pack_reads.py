"""Packed operations read as before: `status`, `history`, `explain`, `result` (text and
JSON) and the dashboard's operation page give the same whole output before and after
`jobtrail prune --pack-after`, and `audit verify --replay` passes on the packed ledger."""

from __future__ import annotations

import difflib
import re
import sqlite3
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from jobtrail.dashboard.access import Access, operators_from_env
from jobtrail.dashboard.web import Dashboard

from cliutil import Workspace, serving
from harness import Harness, harness
from stores import fresh_ledger
from waits import until_true

TOKEN = "alice-token-" + "a" * 20
READS = [
    ("status",),
    ("history",),
    ("explain",),
    ("result",),
    ("status", "--json"),
    ("history", "--json"),
    ("explain", "--json"),
    ("result", "--json"),
]


# "(18 s ago)", "(in 60 min)": the reader's clock moves between the two reads.
_RELATIVE = re.compile(r"\((?:in )?\d+(?:\.\d+)? ?[a-z]+(?: ago)?\)")


def _outputs(ws: Workspace, op_id: str, **env: str) -> list[tuple[int, str, str]]:
    found = []
    for verb, *flags in READS:
        done = ws.run(verb, op_id, *flags, check=False, **env)
        found.append((done.returncode, _RELATIVE.sub("(…)", done.stdout), done.stderr))
    return found


@pytest.mark.slow  # operations driven to their end through the CLI
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_the_cli_reads_a_packed_operation_as_before(
    kind: str, ws: Workspace, tmp_path: Path
) -> None:
    """Every read verb prints the same for a finished operation after packing; the waiting
    one is left alone; audit verify and --replay pass."""
    if kind == "sqlite":
        _cli_reads(ws)
        return
    async with fresh_ledger(kind, tmp_path) as db:
        _cli_reads(ws, JOBTRAIL_DB=db.url)


def _cli_reads(ws: Workspace, **env: str) -> None:
    done = ws.json("submit", "simulator", "--body", '{"n": 1}', **env)["operation_id"]
    assert ws.drive(done, **env)["state"] == "succeeded"
    waiting = ws.json("submit", "simulator", "--body", '{"n": 2}', **env)["operation_id"]
    before = _outputs(ws, done, **env)
    assert all(code == 0 for code, _, _ in before), before
    refused = ws.run("prune", "--pack-after", "1ms", "--no-archive", check=False, **env)
    assert refused.returncode == 1 and "takes no --archive" in refused.stderr
    report = ws.json("prune", "--pack-after", "1ms", **env)
    assert report["operations"] == [done] and len(report["checkpoint_seqs"]) == 1
    after = _outputs(ws, done, **env)
    for (verb, *_), old, new in zip(READS, before, after, strict=True):
        lines = (old[1].splitlines(True), new[1].splitlines(True))
        assert new == old, (verb, "".join(difflib.unified_diff(*lines)))
    assert ws.json("status", waiting, **env)["state"] == "create_pending"
    assert ws.run("audit", "verify", **env).returncode == 0
    replay = ws.run("audit", "verify", "--replay", **env)
    assert "every operation's state is what its history replays to" in replay.stdout
    assert "nothing to pack" in ws.run("prune", "--pack-after", "1ms", **env).stdout


@pytest.fixture
async def rig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Any]:
    monkeypatch.setenv("JOBTRAIL_OPERATOR_TOKENS", f"alice:{TOKEN}")
    async with harness(tmp_path, monkeypatch=monkeypatch) as h:
        app = web.Application()
        Dashboard(
            h.rt.ledger, h.rt.results, h.rt.providers, Access(operators_from_env())
        ).add_routes(app)
        async with TestClient(TestServer(app, host="127.0.0.1")) as client:
            yield h, client


async def _page(client: Any, url: str) -> tuple[int, str]:
    answer = await client.get(url, headers={"Authorization": f"Bearer {TOKEN}"})
    text = await answer.text()
    # Each page carries a fresh CSRF token in its forms: not the operation's content.
    return answer.status, re.sub(r'name="csrf" value="[0-9a-f]+"', 'name="csrf"', text)


async def test_the_dashboard_shows_a_packed_operation_as_before(rig: Any) -> None:
    """The operation page and its result download are the same before and after packing."""
    h, client = rig
    assert isinstance(h, Harness)
    op = await h.submit({"account": "a"})
    await h.run()
    h.clock.advance(timedelta(days=8).total_seconds())
    urls = [f"/operations/{op.operation_id}", f"/operations/{op.operation_id}/result"]
    before = [await _page(client, url) for url in urls]
    assert [status for status, _ in before] == [200, 200]
    batches = await h.rt.ledger.pack(timedelta(days=7), actor="ops:ana")
    assert [p.operation.operation_id for b in batches for p in b.operations] == [op.operation_id]
    assert await h.rt.ledger.store.get(op.operation_id) is None
    assert [await _page(client, url) for url in urls] == before


def test_serve_packs_on_schedule_when_asked(ws: Workspace) -> None:
    """`serve --pack-after 1ms` packs the finished operation at start (logged), and the
    operation still reads as before; without the option nothing is packed."""
    done = ws.json("submit", "simulator", "--body", '{"n": 1}')["operation_id"]
    assert ws.drive(done)["state"] == "succeeded"
    before = _outputs(ws, done)
    with serving(ws, "--pack-after", "1ms", "--pack-every", "1h") as served:
        log = served.log
        until_true(lambda: "packed 1 finished" in log.read_text(), 30, "the packing logged")
    conn = sqlite3.connect(ws.db)
    try:
        assert conn.execute("SELECT operation_id FROM packed_operations").fetchall() == [(done,)]
    finally:
        conn.close()
    assert _outputs(ws, done) == before
