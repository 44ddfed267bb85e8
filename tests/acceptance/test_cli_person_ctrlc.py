"""Ctrl-C as a person presses it: `worker` and `run` stop taking work at once and name the
step still in flight; a second Ctrl-C abandons it; the stop is audited as a graceful stop;
and `run` on an operation another worker holds says whose lease it waits for."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import threading

import pytest

from cliutil import JOBTRAIL, Workspace
from waits import until_true

# `make slow` (its own CI step): signals to worker and run processes, waited for in real time.
pytestmark = pytest.mark.slow

SLOW_CREATE = '{"account": "slow", "_sim": {"delay_create": 8}}'


class Started:
    """A `jobtrail` subprocess whose stderr is read as it comes."""

    def __init__(self, ws: Workspace, *args: str) -> None:
        self.proc = subprocess.Popen(
            [JOBTRAIL, *args],
            cwd=ws.root,
            env=ws.env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    def until_said(self, words: str, limit: float = 30) -> None:
        def said() -> bool:
            if words in self.stderr:
                return True
            assert self.proc.poll() is None or words in self.stderr, self.stderr
            return False

        until_true(said, limit, lambda: f"said {words!r}: {self.stderr}")

    def interrupt(self) -> None:
        self.proc.send_signal(signal.SIGINT)

    def finish(self, limit: float = 30) -> int:
        code = self.proc.wait(timeout=limit)
        self._reader.join(timeout=5)
        if self.proc.stderr is not None:  # read to its end by the reader: close the pipe
            self.proc.stderr.close()
        return code


def _until_create_in_flight(ws: Workspace, op: str) -> None:
    """Until the create's intent is recorded (the simulator then holds its answer back)."""

    def started() -> bool:
        with sqlite3.connect(ws.db) as db:
            found = db.execute("SELECT count(*) FROM attempts WHERE operation_id = ?", (op,))
            return bool(found.fetchone()[0])

    until_true(started, 30, "the create started")


def _stops(ws: Workspace) -> list[dict[str, object]]:
    with sqlite3.connect(ws.db) as db:
        entries = [json.loads(row[0]) for row in db.execute("SELECT entry FROM audit_log")]
    return [e for e in entries if e["kind"] == "worker.stopped"]


def test_worker_stops_in_two_stages_and_audits_a_graceful_stop(ws: Workspace) -> None:
    """First Ctrl-C names the step in flight and takes no new work; the second abandons it;
    the audit log records a graceful stop, and the chain still verifies."""
    op = ws.json("submit", "simulator", "--body", SLOW_CREATE)["operation_id"]
    worker = Started(ws, "worker", "--lease", "30s")
    _until_create_in_flight(ws, op)
    worker.interrupt()
    worker.until_said(f"waiting for the step in flight on {op}")
    later = ws.json("submit", "simulator", "--body", '{"account": "later"}')["operation_id"]
    worker.interrupt()
    assert worker.finish() == 0
    assert f"abandoning the step in flight on {op}" in worker.stderr
    assert "Traceback" not in worker.stderr
    (stop,) = _stops(ws)
    assert stop["data"] == {
        "graceful": True,
        "signal": "SIGINT",
        "abandoned": [op],
        "claimed": 1,
        "finished": 0,
    }
    assert ws.json("history", later) == []  # no work was taken after the first Ctrl-C
    assert ws.json("audit", "verify")["ok"] is True


def test_run_names_the_lease_it_waits_for_and_exits_130_on_ctrl_c(ws: Workspace) -> None:
    """`run` on an operation a worker holds names that worker; Ctrl-C ends it with 130."""
    op = ws.json("submit", "simulator", "--body", SLOW_CREATE)["operation_id"]
    worker = Started(ws, "worker", "--lease", "30s", "--worker-id", "worker:elsewhere")
    _until_create_in_flight(ws, op)
    run = Started(ws, "run", op)
    run.until_said("waiting for the lease held by worker:elsewhere")
    run.interrupt()
    assert run.finish() == 130
    assert f"interrupted: {op} is still create_pending" in run.stderr
    worker.proc.send_signal(signal.SIGTERM)
    assert worker.finish() == 0
    assert ws.json("status", op)["state"] == "accepted"  # the worker's step finished


def test_run_abandons_its_step_on_a_second_ctrl_c(ws: Workspace) -> None:
    """`run` names its step in flight on the first Ctrl-C and abandons it on the second,
    and audits the stop as a graceful one naming the abandoned operation."""
    op = ws.json("submit", "simulator", "--body", SLOW_CREATE)["operation_id"]
    run = Started(ws, "run", op, "--json")
    _until_create_in_flight(ws, op)
    run.interrupt()
    run.until_said(f"waiting for the step in flight on {op}")
    run.interrupt()
    assert run.finish() == 130
    assert f"abandoning the step in flight on {op}" in run.stderr
    (stop,) = _stops(ws)
    assert stop["data"]["abandoned"] == [op]  # type: ignore[index]
