"""A missing credential is said out loud (`submit` warns, `worker` shouts, the timeline says
"not sent"), and `worker -v` logs each step: claim, call, outcome, release."""

from __future__ import annotations

import json
import subprocess

from cliutil import JOBTRAIL, Workspace
from waits import until_true


def test_an_unset_credential_is_named_and_never_called_sent(ws: Workspace) -> None:
    """submit warns naming the variable; the worker says it loudly; explain says the create
    was not sent, never "create sent … nothing was sent"."""
    submitted = ws.run(
        "submit", "simulator", "--body", '{"account": "a"}', "--json", REPORTS_API_TOKEN=""
    )
    assert "warning: environment variable REPORTS_API_TOKEN is not set" in submitted.stderr
    op = json.loads(submitted.stdout)["operation_id"]
    worker = subprocess.Popen(
        [JOBTRAIL, "worker"],
        cwd=ws.root,
        env=ws.env(REPORTS_API_TOKEN=""),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        until_true(
            lambda: any("not sent" in e["event"] for e in ws.json("explain", op)["timeline"]),
            30,
            "the worker tried the create",
        )
    finally:
        worker.terminate()
        _, stderr = worker.communicate(timeout=30)
    assert "WARNING: environment variable REPORTS_API_TOKEN is not set" in stderr
    text = ws.run("explain", op).stdout
    assert "create not sent" in text and "create sent" not in text


def test_worker_verbose_logs_each_step(ws: Workspace) -> None:
    """`worker -v` writes the claim, the call, its outcome and the release to stderr."""
    op = ws.json("submit", "simulator", "--body", '{"account": "v"}')["operation_id"]
    stderr = ws.run("worker", "-v", "--until-idle").stderr
    mine = [line for line in stderr.splitlines() if op in line]
    for step in ("claimed", "calling: send create", "send create: accepted", "released"):
        assert any(step in line for line in mine), f"{step!r} not in {mine}"
    assert ws.json("status", op)["state"] == "succeeded"
    quiet = ws.run("worker", "--until-idle").stderr
    assert "claimed" not in quiet
