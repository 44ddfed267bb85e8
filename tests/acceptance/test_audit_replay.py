"""`jobtrail audit verify --replay` as an operator runs it: a forged state is named."""

from __future__ import annotations

import json
import sqlite3

from cliutil import Workspace


def test_audit_verify_replay_names_a_forged_state(ws: Workspace) -> None:
    """After an UPDATE marks a running operation succeeded, --replay exits 1 naming it, while
    the hash chain alone still verifies."""
    op = ws.json("submit", "simulator", "--body", '{"n": 1}')["operation_id"]
    assert "every operation's state" in ws.run("audit", "verify", "--replay").stdout
    with sqlite3.connect(ws.db) as conn:
        conn.execute("UPDATE operations SET state = 'succeeded' WHERE operation_id = ?", (op,))
    assert ws.run("audit", "verify").returncode == 0
    done = ws.run("audit", "verify", "--replay", check=False)
    assert done.returncode == 1
    assert f"operation forged: {op}: stored state is succeeded" in done.stdout
    report = json.loads(ws.run("audit", "verify", "--replay", "--json", check=False).stdout)
    assert report["ok"] is False and [f["operation_id"] for f in report["forged"]] == [op]
