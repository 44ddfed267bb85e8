"""Schedules a provider cannot break, as a user runs jobtrail: `jobtrail worker --until-idle`
as a subprocess against the simulator on loopback, in real time."""

from __future__ import annotations

import json
from typing import Any

from jobtrail.simulator import SimulatorThread

from cliutil import Workspace


def submit(ws: Workspace, faults: dict[str, Any], *options: str) -> str:
    body = json.dumps({"account": "hostile", "_sim": {"never_finish": True, **faults}})
    return str(ws.json("submit", "simulator", "--body", body, *options)["operation_id"])


def test_worker_until_idle_exits_at_the_result_deadline_despite_a_far_retry_after(
    ws: Workspace,
) -> None:
    """A year-long Retry-After and a 3 s result deadline: the worker exits, result_timed_out."""
    op = submit(ws, {"status_hint": {"value": "far"}}, "--result-deadline", "3s")
    done = ws.run("worker", "--until-idle", check=False)
    assert done.returncode == 0, done.stderr
    assert ws.json("status", op)["state"] == "result_timed_out"


def test_worker_until_idle_exits_despite_a_huge_retry_after(ws: Workspace) -> None:
    """A 5,000-digit Retry-After is "far", not a crash: the worker exits at the deadline."""
    op = submit(ws, {"status_hint": {"value": "huge"}}, "--result-deadline", "3s")
    done = ws.run("worker", "--until-idle", check=False)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert ws.json("status", op)["state"] == "result_timed_out"


def test_retry_after_zero_cannot_make_the_worker_spin(
    ws: Workspace, simulator: SimulatorThread
) -> None:
    """Retry-After: 0 on every read: the status calls stay within elapsed / [poll] min + slack."""
    provider = ws.root / "providers" / "simulator.toml"
    provider.write_text(provider.read_text() + 'min = "500ms"\n')  # [poll] is the last table
    op = submit(ws, {"status_hint": {"value": "zero"}}, "--result-deadline", "3s")
    ws.run("worker", "--until-idle")
    assert ws.json("status", op)["state"] == "result_timed_out"
    (job,) = [j for j in simulator.jobs.values() if j.client_reference == op]
    reads = [c for c in simulator.calls if c.kind == "status" and c.job_id == job.job_id]
    assert 1 <= len(reads) <= 3 / 0.5 + 3
