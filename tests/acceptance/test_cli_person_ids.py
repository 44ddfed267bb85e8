"""Operation ids (and the other ids people paste back) are never cut, at any terminal
width, when the output is piped."""

from __future__ import annotations

import pytest

from cliutil import Workspace


@pytest.mark.parametrize("columns", ["40", "200"])
def test_ids_are_whole_in_every_table_at_any_width(ws: Workspace, columns: str) -> None:
    """list, status and history print each id whole, piped, with COLUMNS=40 and 200."""
    ops = [
        ws.json("submit", "simulator", "--body", f'{{"account": "a{n}"}}', "--key", f"k-{n}")
        for n in range(3)
    ]
    ws.run("run", ops[0]["operation_id"])
    listed = ws.run("list", COLUMNS=columns).stdout
    for op in ops:
        assert op["operation_id"] in listed
    first = ops[0]
    status = ws.run("status", first["operation_id"], COLUMNS=columns).stdout
    for field in ("operation_id", "idempotency_token", "request_fingerprint", "trace_id"):
        assert first[field] in status, field
    remote = ws.json("status", first["operation_id"])["remote_job_id"]
    assert remote in status and remote in ws.run("list", COLUMNS=columns).stdout
    history = ws.run("history", first["operation_id"], COLUMNS=columns).stdout
    assert "create_pending" in history and "succeeded" in history
    assert "…" not in listed + status + history
