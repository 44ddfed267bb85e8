"""`jobtrail worker --processes N`: N workers under one supervisor. The supervisor forwards
Ctrl-C to each child once (each records its own graceful stop), starts a child killed under
it again, and gives up with a clear message on a child that keeps dying."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess

import pytest
from test_cli_person_ctrlc import Started

from cliutil import JOBTRAIL, Workspace
from waits import until_true

# `make slow` (its own CI step): a supervisor and its worker processes, signals and restarts.
pytestmark = pytest.mark.slow

STARTED = re.compile(r"worker process (\d+) started \(pid (\d+)\)")


def _children(started: Started) -> dict[int, list[int]]:
    """Each child's pids, in the order the supervisor started them."""
    found: dict[int, list[int]] = {}
    for number, pid in STARTED.findall(started.stderr):
        found.setdefault(int(number), []).append(int(pid))
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _ended(ws: Workspace, ops: list[str]) -> bool:
    with sqlite3.connect(ws.db) as db:
        marks = ", ".join("?" for _ in ops)
        states = db.execute(f"SELECT state FROM operations WHERE operation_id IN ({marks})", ops)
        return all(row[0] == "succeeded" for row in states.fetchall())


def _stops(ws: Workspace) -> list[dict[str, object]]:
    with sqlite3.connect(ws.db) as db:
        entries = [json.loads(row[0]) for row in db.execute("SELECT entry FROM audit_log")]
    return [e for e in entries if e["kind"] == "worker.stopped"]


def test_two_processes_share_the_work_survive_a_kill_and_stop_together(ws: Workspace) -> None:
    ops = [
        ws.json("submit", "simulator", "--body", json.dumps({"account": f"a{n}"}))["operation_id"]
        for n in range(6)
    ]
    started = Started(ws, "worker", "--processes", "2", "--worker-id", "w", "--concurrency", "4")
    try:
        until_true(lambda: len(_children(started)) == 2, 60, lambda: started.stderr)
        assert "SQLite ledger take its one write lock in turn" in started.stderr
        until_true(lambda: _ended(ws, ops), 90, lambda: started.stderr)

        first = _children(started)[1][0]
        os.kill(first, signal.SIGKILL)  # as the out-of-memory killer would
        until_true(lambda: len(_children(started).get(1, [])) == 2, 60, lambda: started.stderr)
        assert f"worker process 1 (pid {first}) died (signal 9); starting it again" in (
            started.stderr
        )
        again = ws.json("submit", "simulator", "--body", '{"account": "after"}')["operation_id"]
        until_true(lambda: _ended(ws, [again]), 90, lambda: started.stderr)

        living = [pids[-1] for pids in _children(started).values()]
        assert all(_alive(pid) for pid in living)
        started.interrupt()  # Ctrl-C: to the supervisor only; it forwards it once
        assert started.finish(60) == 0, started.stderr
    finally:
        if started.proc.poll() is None:
            started.proc.kill()
    assert not any(_alive(pid) for pid in living)
    stops = _stops(ws)
    assert sorted(str(s["actor"]) for s in stops) == ["w-1", "w-2"], stops
    assert all(s["data"]["signal"] == "SIGINT" for s in stops), stops  # type: ignore[index]
    assert started.stderr.count("stopping (SIGINT)") == 2  # once each: no second signal


def test_a_child_that_keeps_dying_stops_the_supervisor_with_a_reason(ws: Workspace) -> None:
    nobody = "postgresql://postgres@127.0.0.1:1/jobtrail"  # nothing listens on port 1
    done = subprocess.run(
        [JOBTRAIL, "--db", nobody, "worker", "--processes", "2"],
        cwd=ws.root,
        env=ws.env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert re.search(
        r"supervisor: worker process \d \(pid \d+\) died 3 times within 60 s "
        r"\(last: exit code 1\); the others were stopped",
        done.stderr,
    ), done.stderr
    assert "cannot open the ledger database" in done.stderr  # the child's own words, above


def test_the_children_stop_when_the_supervisor_is_killed(ws: Workspace) -> None:
    """kill -9 of the supervisor leaves no worker running unsupervised: each child is sent
    SIGTERM (a graceful stop, audited) when its parent dies."""
    started = Started(ws, "worker", "--processes", "2", "--worker-id", "k")
    until_true(lambda: len(_children(started)) == 2, 60, lambda: started.stderr)
    until_true(lambda: started.stderr.count(" working on ") == 2, 60, lambda: started.stderr)
    pids = [p[0] for p in _children(started).values()]
    started.proc.kill()
    started.finish(30)
    until_true(lambda: not any(_alive(pid) for pid in pids), 60, "the children stopped")
    assert sorted(str(s["actor"]) for s in _stops(ws)) == ["k-1", "k-2"]
