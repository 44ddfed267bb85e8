"""`jobtrail run OP` exits 0 only when the operation succeeded; every other end has its own
documented exit code, so `jobtrail run OP && next-step` is safe."""

from __future__ import annotations

import json
import subprocess

import pytest

from cliutil import JOBTRAIL, Workspace

VIOLATION = '{"account": "v", "_sim": {"drop_create_answer": true, "different_id_on_retry": true}}'
REJECTED = json.dumps({"account": "r", "_sim": {"reject_create": {"status": 400, "message": "no"}}})
SLOW = '{"account": "slow", "_sim": {"duration_seconds": 30}}'


def _run(ws: Workspace, op: str, **env: str) -> tuple[int, str]:
    done = ws.run("run", op, "--json", check=False, **env)
    state = json.loads(done.stdout)["state"] if done.stdout.strip() else None
    return done.returncode, state or done.stderr


def _submit(ws: Workspace, body: str, *options: str) -> str:
    return str(ws.json("submit", "simulator", "--body", body, *options)["operation_id"])


@pytest.mark.slow  # `run` to every end state, a process each
def test_each_end_of_run_has_its_own_exit_code(ws: Workspace) -> None:
    """succeeded 0, failed 3, cancelled 4, needs_human 5, result_timed_out 6, and the
    shell's `&&` runs the next step only after a success."""
    done = _submit(ws, '{"account": "ok"}')
    assert _run(ws, done) == (0, "succeeded")
    assert _run(ws, _submit(ws, REJECTED)) == (3, "failed")
    assert _run(ws, _submit(ws, VIOLATION)) == (5, "needs_human")
    slow = _submit(ws, SLOW, "--result-deadline", "300ms")
    assert _run(ws, slow) == (6, "result_timed_out")
    ws.run("cancel", slow, "--reason", "not needed after all")
    assert _run(ws, slow) == (4, "cancelled")
    chained = subprocess.run(
        f"{JOBTRAIL} run {_submit(ws, REJECTED)} >/dev/null && echo NEXT-STEP-RAN",
        shell=True,
        cwd=ws.root,
        env=ws.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert chained.returncode == 3 and "NEXT-STEP-RAN" not in chained.stdout


def test_run_without_the_provider_credential_exits_7_and_sends_nothing(ws: Workspace) -> None:
    """An unset credential variable is named, nothing is sent, and run exits 7."""
    op = _submit(ws, '{"account": "nocred"}')
    done = ws.run("run", op, check=False, REPORTS_API_TOKEN="")
    assert done.returncode == 7
    assert "REPORTS_API_TOKEN is not set" in done.stderr and "Traceback" not in done.stderr
    assert ws.json("status", op)["state"] == "create_pending"
    assert ws.json("history", op) == []


def test_run_help_documents_the_exit_codes(ws: Workspace) -> None:
    """`run --help` lists every exit code, each with what it means."""
    text = ws.run("run", "--help").stdout
    for line in ("0    succeeded", "3    failed", "4    cancelled", "5    needs a person"):
        assert line in text
    for code in ("6    timed out", "7    provider missing", "130  interrupted"):
        assert code in text
