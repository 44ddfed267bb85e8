"""`jobtrail prune` and `jobtrail archive` as an operator runs them, on a SQLite ledger."""

from __future__ import annotations

import json
import sqlite3

import pytest

from cliutil import Workspace


def _finished_and_waiting(ws: Workspace) -> tuple[str, str]:
    done = ws.json("submit", "simulator", "--body", '{"n": 1}')["operation_id"]
    assert ws.drive(done)["state"] == "succeeded"
    waiting = ws.json("submit", "simulator", "--body", '{"n": 2}')["operation_id"]
    return done, waiting


@pytest.mark.slow  # operations driven to their end, then pruned, through the CLI
def test_prune_archives_finished_operations_and_the_chain_still_verifies(ws: Workspace) -> None:
    """prune moves the finished operation into the archive (the waiting one stays), audit
    verify and --replay pass after the cut, and archive show/verify read it back."""
    done, waiting = _finished_and_waiting(ws)
    refused = ws.run("prune", "--finished-before", "1ms", check=False)
    assert refused.returncode == 1 and "--archive FILE" in refused.stderr
    assert ws.json("status", done)["state"] == "succeeded"

    report = ws.json("prune", "--finished-before", "1ms", "--archive", "old.jsonl.gz")
    assert report["operations"] == [done] and report["audit_entries"] > 0
    assert ws.run("status", done, check=False).returncode == 1
    assert ws.json("status", waiting)["state"] == "create_pending"
    assert "more pruned under checkpoints" in ws.run("audit", "verify").stdout
    assert ws.json("audit", "verify")["pruned"] == report["audit_entries"]
    assert ws.run("audit", "verify", "--replay").returncode == 0

    shown = ws.run("archive", "show", "old.jsonl.gz", done).stdout
    assert f"Operation {done} — succeeded" in shown and "Timeline" in shown
    as_json = ws.json("archive", "show", "old.jsonl.gz", done)
    assert as_json["operation_id"] == done and as_json["state"] == "succeeded"
    assert "archive intact: 1 operations" in ws.run("archive", "verify", "old.jsonl.gz").stdout
    assert ws.run("archive", "verify", "old.jsonl.gz", "--ledger").returncode == 0
    ws.run("--db", "other.db", "submit", "simulator", "--body", "{}")  # another ledger
    elsewhere = ws.run(
        "--db", "other.db", "archive", "verify", "old.jsonl.gz", "--ledger", check=False
    )
    assert elsewhere.returncode == 1 and "another ledger" in elsewhere.stdout
    again = ws.run("prune", "--finished-before", "1ms", "--archive", "old.jsonl.gz", check=False)
    assert again.returncode == 1 and "already exists" in again.stderr


def test_deleting_outside_prune_is_refused_and_detected(ws: Workspace) -> None:
    """A plain DELETE of a waiting operation's audit rows is refused by the database; with
    the trigger dropped it goes through, and audit verify reports it after a prune."""
    _, waiting = _finished_and_waiting(ws)
    ws.json("prune", "--finished-before", "1ms", "--archive", "old.jsonl.gz")
    conn = sqlite3.connect(ws.db)
    delete = f"DELETE FROM audit_log WHERE operation_id = '{waiting}'"
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute(delete)
    conn.execute("DROP TRIGGER audit_no_delete")
    conn.execute(delete)
    conn.commit()
    conn.close()
    done = ws.run("audit", "verify", "--json", check=False)
    assert done.returncode == 1 and "deleted" in json.loads(done.stdout)["problem"]


def test_prune_without_an_archive_needs_saying_so(ws: Workspace) -> None:
    """--no-archive drops the finished operation unkept, and the chain still verifies."""
    done, waiting = _finished_and_waiting(ws)
    both = ws.run(
        "prune", "--finished-before", "1ms", "--no-archive", "--archive", "x", check=False
    )
    assert both.returncode == 1 and "choose one" in both.stderr
    text = ws.run("prune", "--finished-before", "1ms", "--no-archive").stdout
    assert "pruned 1 operations" in text and "without an archive" in text
    assert ws.run("status", done, check=False).returncode == 1
    assert ws.run("status", waiting).returncode == 0
    assert ws.run("audit", "verify").returncode == 0
    assert "nothing to prune" in ws.run("prune", "--finished-before", "1ms", "--no-archive").stdout
