"""`jobtrail resolve --decision adopt` with a job id jobtrail never saw, as a person would run
it: the job's status is read through the operation's provider first and recorded as the
evidence; a job that cannot be read is refused and nothing changes."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from jobtrail.simulator import SimulatorThread

from cliutil import Workspace

# A lost create answer, then a refused retry, with a provider file that declares no lookup:
# the job exists at the provider, jobtrail never learned its id, and a person must decide.
HIDDEN = (
    '{"account": "h", "_sim": {"drop_create_answer": true, '
    '"reject_retry": {"status": 422, "message": "duplicate request"}}}'
)


def blind_provider(ws: Workspace) -> None:
    """providers/blind.toml: the simulator's file without the lookup by client reference."""
    doc = (ws.root / "providers" / "simulator.toml").read_text()
    lines = [line for line in doc.splitlines() if not line.startswith("list = ")]
    text = "\n".join(lines).replace('name = "simulator"', 'name = "blind"')
    (ws.root / "providers" / "blind.toml").write_text(text + "\n")


def stuck(ws: Workspace) -> str:
    blind_provider(ws)
    op: str = ws.json("submit", "blind", "--body", HIDDEN)["operation_id"]
    assert ws.drive(op)["state"] == "needs_human"
    return op


def attempts(ws: Workspace, op: str) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = json.loads(ws.run("escalation", op).stdout)["request_history"]
    return history


def adopt(ws: Workspace, op: str, job_id: str, *more: str, check: bool = True) -> Any:
    args = ["resolve", op, "--decision", "adopt", "--job-id", job_id, *more]
    return ws.run(*args, "--actor", "alice", "--reason", "support found it", check=check)


def test_an_unseen_job_id_is_read_then_adopted(ws: Workspace, simulator: SimulatorThread) -> None:
    """A job id found by a person is adopted after a real status read, recorded as the
    evidence of the decision; the operation then finishes with that one job."""
    op = stuck(ws)
    (job,) = [j.job_id for j in simulator.jobs.values() if j.client_reference == op]
    assert job not in ws.run("escalation", op).stdout  # jobtrail never saw this id
    before = len(attempts(ws, op))
    done = json.loads(adopt(ws, op, job, "--json").stdout)
    assert done["state"] == "accepted" and done["remote_job_id"] == job
    reads = attempts(ws, op)[before:]
    assert [(a["kind"], a["outcome"], a["actor"]) for a in reads] == [
        ("status", "observed", "alice")
    ]
    assert job in reads[0]["request"]["url"]
    with sqlite3.connect(ws.db) as conn:
        entries = [json.loads(e) for (e,) in conn.execute("SELECT entry FROM audit_log")]
    decided = [e for e in entries if e["kind"] == "human.decision"]
    assert decided[-1]["data"]["evidence"] == reads[0]["attempt_id"]
    with sqlite3.connect(ws.db) as conn:  # stored as every writer stores it: the outcome's word
        (stored,) = conn.execute(
            "SELECT outcome FROM attempts WHERE attempt_id = ?", (reads[0]["attempt_id"],)
        ).fetchone()
    assert stored == "observed"
    assert ws.run("audit", "verify").returncode == 0
    final = ws.drive(op)
    assert final["state"] == "succeeded" and final["remote_job_id"] == job
    assert [j.job_id for j in simulator.jobs.values() if j.client_reference == op] == [job]


def test_a_job_id_that_cannot_be_read_is_refused(ws: Workspace) -> None:
    """An unseen id whose status read fails (404) is refused with a clear message; the
    operation and its history are unchanged, and the read that was sent is recorded (every
    request on the wire is an attempt in the ledger), marked as a refused adoption's."""
    op = stuck(ws)
    before = (ws.json("status", op), ws.json("history", op), attempts(ws, op))
    refused = adopt(ws, op, "job_0000000000000000", check=False)
    assert refused.returncode == 1
    assert "reading its status" in refused.stderr and "nothing was changed" in refused.stderr
    assert "404" in refused.stderr
    after = (ws.json("status", op), ws.json("history", op), attempts(ws, op))
    assert after[:2] == before[:2]
    (read,) = after[2][len(before[2]) :]
    assert after[2][: len(before[2])] == before[2]
    assert read["kind"] == "status" and read["http_status"] == 404
    assert read["request"]["url"].endswith("/job_0000000000000000")
    assert read["detail"]["refused_adoption"] is True


def test_provider_check_says_a_retry_only_provider_cannot_prove_absence(ws: Workspace) -> None:
    """provider check warns that without a lookup, a refused retry stops for a person."""
    blind_provider(ws)
    said = " ".join(ws.run("provider", "check", "providers/blind.toml").stdout.split())
    assert "only a lookup can prove nothing was created" in said
    full = ws.run("provider", "check", "providers/simulator.toml").stdout
    assert "only a lookup" not in " ".join(full.split())
