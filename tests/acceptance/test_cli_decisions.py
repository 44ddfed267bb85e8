"""Human decisions through the CLI: resolve a needs_human, extend a timed-out operation,
and a worker that stops gracefully on SIGTERM."""

from __future__ import annotations

import signal
import subprocess

import pytest

from jobtrail.simulator import SimulatorThread

from cliutil import JOBTRAIL, Workspace
from waits import until_true

VIOLATION = '{"account": "v", "_sim": {"drop_create_answer": true, "different_id_on_retry": true}}'


def test_adopting_one_of_the_job_ids_resumes_the_operation(ws: Workspace) -> None:
    """needs_human -> adopt a job id the provider gave -> the worker finishes it."""
    op = ws.json("submit", "simulator", "--body", VIOLATION)["operation_id"]
    stuck = ws.drive(op)
    assert stuck["state"] == "needs_human" and len(stuck["conflicting_job_ids"]) == 2
    assert stuck["conflicting_job_ids"][0] in ws.run("escalation", op).stdout
    refused = ws.run(
        "resolve",
        op,
        "--decision",
        "adopt",
        "--job-id",
        "job_other",
        "--actor",
        "alice",
        "--reason",
        "pick",
        check=False,
    )
    assert refused.returncode == 1 and "not a job id this operation saw" in refused.stderr
    chosen = stuck["conflicting_job_ids"][0]
    resumed = ws.json(
        "resolve",
        op,
        "--decision",
        "adopt",
        "--job-id",
        chosen,
        "--actor",
        "alice",
        "--reason",
        "support confirmed the first job",
    )
    assert resumed["state"] == "accepted" and resumed["remote_job_id"] == chosen
    final = ws.drive(op)
    assert final["state"] == "succeeded" and final["remote_job_id"] == chosen
    decided = [h for h in ws.json("history", op) if h["evidence"] == "human_decision"]
    assert decided and decided[0]["actor"] == "alice"


def test_retry_as_new_submits_a_fresh_operation_once(ws: Workspace) -> None:
    """retry-as-new fails the stuck operation and records the same request anew, once."""
    op = ws.json("submit", "simulator", "--body", VIOLATION)["operation_id"]
    ws.drive(op)
    first = ws.json(
        "resolve", op, "--decision", "retry-as-new", "--actor", "bob", "--reason", "start clean"
    )
    assert first["state"] == "failed" and first["replaced_by"] != op
    fresh = ws.json("status", first["replaced_by"])
    original = ws.json("status", op)
    assert fresh["request_fingerprint"] == original["request_fingerprint"]
    assert fresh["idempotency_token"] != original["idempotency_token"]
    again = ws.run(
        "resolve",
        op,
        "--decision",
        "retry-as-new",
        "--actor",
        "bob",
        "--reason",
        "again",
        check=False,
    )
    assert again.returncode == 1 and "does not apply in state failed" in again.stderr


def test_extend_resumes_a_timed_out_operation(ws: Workspace) -> None:
    """result_timed_out -> extend the deadline -> observing again, with the actor recorded."""
    body = '{"account": "slow", "_sim": {"duration_seconds": 2}}'
    op = ws.json("submit", "simulator", "--body", body, "--result-deadline", "300ms")[
        "operation_id"
    ]
    assert ws.drive(op)["state"] == "result_timed_out"
    extended = ws.json(
        "extend",
        op,
        "--result-deadline",
        "1m",
        "--actor",
        "carol",
        "--reason",
        "the report is worth waiting for",
    )
    assert extended["state"] == "observing"
    assert ws.drive(op)["state"] == "succeeded"
    assert any(h["actor"] == "carol" and h["to"] == "observing" for h in ws.json("history", op))


@pytest.mark.slow  # a worker process stopped by SIGTERM, in real time
def test_sigterm_stops_the_worker_gracefully(ws: Workspace, simulator: SimulatorThread) -> None:
    """SIGTERM during a slow create: the worker exits cleanly, the call is recorded as sent,
    and the next worker finishes the operation with exactly one remote job."""
    body = '{"account": "slow-create", "_sim": {"delay_create": 1.5}}'
    op = ws.json("submit", "simulator", "--body", body)["operation_id"]
    worker = subprocess.Popen(
        [JOBTRAIL, "worker", "--lease", "10s"],
        cwd=ws.root,
        env=ws.env(),
        stderr=subprocess.PIPE,
        text=True,
    )
    until_true(
        lambda: any(c.client_reference == op for c in simulator.calls),
        20,
        "the worker sent the create",
    )
    worker.send_signal(signal.SIGTERM)
    _, said = worker.communicate(timeout=30)  # reaps it and closes its stderr pipe
    assert worker.returncode == 0 and "stopped:" in said
    creates = [h for h in ws.json("explain", op)["timeline"] if "create sent" in h["event"]]
    assert creates  # the create was recorded as sent
    ws.run("worker", "--until-idle")
    final = ws.json("status", op)
    assert final["state"] == "succeeded"
    assert [j.job_id for j in simulator.jobs.values() if j.client_reference == op] == [
        final["remote_job_id"]
    ]
