"""SIGKILL at the dangerous moments of a create: the operation resumes with the same token
and the provider ends up with exactly one job."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from jobtrail.simulator import SimulatorThread

from cliutil import Workspace

# `make slow` (its own CI step): SIGKILLed worker processes, waited for in real time.
pytestmark = pytest.mark.slow

CRASHPOINT = str(Path(__file__).resolve().parents[1] / "crashpoint.py")


def crash(ws: Workspace, point: str) -> str:
    done = subprocess.run(
        [
            sys.executable,
            CRASHPOINT,
            str(ws.db),
            str(ws.root / "data"),
            str(ws.root / "providers" / "simulator.toml"),
            point,
            '{"account": "acct_218"}',
        ],
        env=ws.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    return done.stdout.strip()


def jobs_for(sim: SimulatorThread, op: str) -> list[str]:
    return [job.job_id for job in sim.jobs.values() if job.client_reference == op]


def tokens_sent(sim: SimulatorThread, op: str) -> set[str | None]:
    return {c.idempotency_key for c in sim.calls if c.kind == "create" and c.client_reference == op}


@pytest.mark.parametrize("point", ["after_submit", "after_intent", "after_answer"])
def test_killed_around_create_resumes_with_the_same_token(
    ws: Workspace, simulator: SimulatorThread, point: str
) -> None:
    """Killed after the record was committed (before, while or after sending the create):
    the resumed operation uses the same token and exactly one remote job exists."""
    op = crash(ws, point)
    record = ws.json("status", op)
    assert record["state"] == "create_pending" and record["remote_job_id"] is None
    sent_before = tokens_sent(simulator, op)
    assert sent_before == ({record["idempotency_token"]} if point == "after_answer" else set())
    ws.run("worker", "--until-idle", "--lease", "2s")
    final = ws.json("status", op)
    assert final["state"] == "succeeded"
    assert tokens_sent(simulator, op) == {record["idempotency_token"]}
    assert jobs_for(simulator, op) == [final["remote_job_id"]]
    if point != "after_submit":
        history = ws.json("history", op)
        assert history[0]["to"] == "create_unknown"  # the interrupted call counts as sent


def test_killed_after_the_job_id_is_stored_continues_without_a_second_create(
    ws: Workspace, simulator: SimulatorThread
) -> None:
    """Killed after the job id is stored but before the first poll: a restarted worker
    polls the same job; no second create is sent."""
    op = crash(ws, "after_job_id_stored")
    record = ws.json("status", op)
    assert record["state"] == "accepted" and record["remote_job_id"]
    ws.run("worker", "--until-idle", "--lease", "2s")
    final = ws.json("status", op)
    assert final["state"] == "succeeded" and final["remote_job_id"] == record["remote_job_id"]
    assert len([c for c in simulator.calls if c.kind == "create" and c.client_reference == op]) == 1
    assert jobs_for(simulator, op) == [record["remote_job_id"]]
