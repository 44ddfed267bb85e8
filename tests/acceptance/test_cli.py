"""The CLI as a user runs it: a subprocess against a real SQLite file and the simulator."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from jobtrail.simulator import SimulatorThread

from cliutil import Workspace, make_workspace, raw_bytes
from harness import SECRET

REQUIRED = {
    "operation_id",
    "state",
    "remote_job_id",
    "remote_state",
    "trace_id",
    "idempotency_token",
    "request_fingerprint",
}


def test_submit_then_run_to_success(ws: Workspace) -> None:
    """submit --json and status --json carry the record's identity; run drives it home."""
    submitted = ws.json(
        "submit",
        "simulator",
        "--body",
        '{"account": "acct_218"}',
        "--key",
        "feb-report",
        "--reason",
        "February report",
    )
    assert set(submitted) >= REQUIRED and submitted["state"] == "create_pending"
    assert submitted["request_fingerprint"].startswith("sha256:")
    op = submitted["operation_id"]
    final = ws.drive(op)
    assert final["state"] == "succeeded" and final["remote_job_id"]
    status = ws.json("status", op)
    assert set(status) >= REQUIRED and status["idempotency_token"] == submitted["idempotency_token"]
    assert ws.json("result", op)["result"]["valid"] is True
    history = ws.json("history", op)
    assert [h["to"] for h in history][-1] == "succeeded"
    assert ws.json("list")["operations"][0]["operation_id"] == op
    text = ws.run("explain", op).stdout
    assert "asked:" in text and "remote job:" in text and "Timeline" in text
    assert ws.run("audit", "verify").returncode == 0


def test_same_key_same_body_returns_the_original(ws: Workspace) -> None:
    """Resubmitting the same request under the same key sends nothing new."""
    first = ws.json("submit", "simulator", "--body", '{"a": 1, "b": 2}', "--key", "k")
    again = ws.json("submit", "simulator", "--body", '{"b": 2, "a": 1}', "--key", "k")
    assert again["operation_id"] == first["operation_id"]


def test_same_key_changed_body_is_refused_clearly(ws: Workspace) -> None:
    """A changed request under an existing key: one clear sentence, exit 1, no traceback."""
    ws.run("submit", "simulator", "--body", '{"range": "2025-02"}', "--key", "k")
    refused = ws.run(
        "submit", "simulator", "--body", '{"range": "2025-03"}', "--key", "k", check=False
    )
    assert refused.returncode == 1
    assert "use a new key" in refused.stderr and "Traceback" not in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["status", "op_missing"], "no ledger at"),
        (["submit", "simulator", "--body", "{not json"], "not valid JSON"),
        (["submit", "nowhere", "--body", "{}"], "no provider named"),
        (["submit", "simulator", "--body", "@missing.json"], "cannot read the body file"),
        (["submit", "simulator", "--body", "{}", "--result-deadline", "soon"], "duration"),
        (["cancel", "op_missing", "--reason", "x"], "no ledger at"),
    ],
)
def test_errors_are_one_clear_sentence(ws: Workspace, args: list[str], message: str) -> None:
    """Bad input gets a clear error and a non-zero exit, never a traceback."""
    done = ws.run(*args, check=False)
    assert done.returncode != 0 and message in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


def test_cancel_records_intent_and_never_claims_cancelled(ws: Workspace) -> None:
    """cancel before the job exists records the intent; the worker then withdraws it."""
    op = ws.json("submit", "simulator", "--body", "{}")["operation_id"]
    answered = ws.json("cancel", op, "--reason", "wrong account")
    assert answered["state"] == "create_pending"
    assert answered["cancel_intent"]["actor"] == "tester"
    ws.run("worker", "--until-idle")
    final = ws.json("status", op)
    assert final["state"] == "failed" and final["remote_job_id"] is None
    assert ws.json("history", op)[-1]["evidence"] == "withdrawn"


def test_provider_check_says_what_can_be_guaranteed(ws: Workspace) -> None:
    """provider check states at-most-once plainly, with and without reconciliation."""
    good = ws.run("provider", "check", "providers/simulator.toml").stdout
    assert "at-most-once create  provable" in good
    text = (ws.root / "providers" / "simulator.toml").read_text()
    weak = text.split("[reconcile]")[0] + text.split("[deadlines]")[1].join(["[deadlines]", ""])
    (ws.root / "weak.toml").write_text(weak)
    poor = ws.run("provider", "check", "weak.toml").stdout
    assert "cannot be proven: this provider offers no reconciliation" in poor


def test_a_secret_reaches_no_file_and_no_output(ws: Workspace) -> None:
    """The auth secret from the environment is used but never stored or printed; a secret in
    a request header is refused."""
    refused = ws.run(
        "submit",
        "simulator",
        "--body",
        "{}",
        "--header",
        f"Authorization: Bearer {SECRET}",
        check=False,
    )
    assert refused.returncode == 1 and "carries a credential" in refused.stderr
    refused = ws.run("submit", "simulator", "--body", '{"password": "hunter2-secret"}', check=False)
    assert refused.returncode == 1 and "sensitive field" in refused.stderr
    op = ws.json("submit", "simulator", "--body", '{"account": "a"}', "--key", "s")["operation_id"]
    ws.drive(op)
    for command in (["status", op], ["explain", op], ["history", op], ["escalation", op]):
        ws.run(*command)
    ws.run("audit", "verify")
    stored = raw_bytes(ws.root)
    assert stored and SECRET.encode() not in stored
    assert all(SECRET not in output for output in ws.outputs)
    audit = sqlite3.connect(ws.db).execute("SELECT group_concat(entry) FROM audit_log")
    assert "hunter2-secret" not in audit.fetchone()[0]  # a sensitive body field is refused


def tamper(db: Path, *statements: str) -> None:
    conn = sqlite3.connect(db)
    conn.execute("DROP TRIGGER audit_no_update")
    conn.execute("DROP TRIGGER audit_no_delete")
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()


@pytest.fixture(scope="module")
def five_submitted(tmp_path_factory: pytest.TempPathFactory, simulator: SimulatorThread) -> Path:
    """A ledger of five operations submitted by `jobtrail submit`, made once for the module:
    each tampering case below works on its own copy."""
    made = make_workspace(tmp_path_factory.mktemp("five-submitted"), simulator.base_url)
    for n in range(5):
        made.run("submit", "simulator", "--body", f'{{"n": {n}}}')
    return made.db


@pytest.mark.parametrize(
    ("statements", "named"),
    [
        (
            ["UPDATE audit_log SET entry = replace(entry, 'tester', 'mallory') WHERE seq = 2"],
            "entry #2 was edited",
        ),
        (["DELETE FROM audit_log WHERE seq = 3"], "deleted between #2 and #4"),
        (
            [
                "UPDATE audit_log SET seq = seq + 100 WHERE seq >= 3",
                "INSERT INTO audit_log (seq, operation_id, entry, prev_hash, hash) "
                "SELECT 3, operation_id, entry, prev_hash, hash FROM audit_log WHERE seq = 2",
                "UPDATE audit_log SET seq = seq - 99 WHERE seq >= 103",
            ],
            "inserted",
        ),
        (
            [
                "UPDATE audit_log SET seq = -1 WHERE seq = 2",
                "UPDATE audit_log SET seq = 2 WHERE seq = 3",
                "UPDATE audit_log SET seq = 3 WHERE seq = -1",
            ],
            "reordered",
        ),
    ],
)
def test_audit_verify_names_the_tampered_entry(
    five_submitted: Path, ws: Workspace, statements: list[str], named: str
) -> None:
    """Editing, deleting, inserting and reordering audit rows are each detected and named."""
    for made in five_submitted.parent.glob(f"{five_submitted.name}*"):  # the file, its WAL
        shutil.copyfile(made, ws.root / made.name.replace(five_submitted.name, ws.db.name))
    assert ws.run("audit", "verify").returncode == 0
    tamper(ws.db, *statements)
    done = ws.run("audit", "verify", check=False)
    assert done.returncode == 1 and named in done.stdout, done.stdout


def test_cutting_the_tail_is_caught_against_an_anchor(ws: Workspace) -> None:
    """Entries cut off the end leave a valid shorter chain; a saved anchor exposes it."""
    for n in range(3):
        ws.run("submit", "simulator", "--body", f'{{"n": {n}}}')
    anchor = ws.run("audit", "head").stdout.strip()
    assert anchor.startswith("3:")
    tamper(ws.db, "DELETE FROM audit_log WHERE seq = 3")
    done = ws.run("audit", "verify", "--anchor", anchor, check=False)
    assert done.returncode == 1 and "anchor" in done.stdout


def test_history_and_audit_refuse_update_and_delete(ws: Workspace) -> None:
    """The database itself refuses changes to the append-only tables."""
    op = ws.json("submit", "simulator", "--body", "{}")["operation_id"]
    ws.drive(op)
    conn = sqlite3.connect(ws.db)
    for statement in (
        "UPDATE transitions SET actor = 'x'",
        "DELETE FROM transitions",
        "UPDATE audit_log SET entry = '{}'",
        "DELETE FROM audit_log",
    ):
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            conn.execute(statement)
