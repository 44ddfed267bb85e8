"""`extend` through the CLI: each flag sends its own deadline's decision, and the wrong flag
for the operation's state is refused with a sentence naming the right one."""

from __future__ import annotations

from cliutil import Workspace

STUCK = '{"account": "stuck", "_sim": {"never_finish": true, "cancel": "ignore"}}'


def _extend(ws: Workspace, op: str, flag: str, check: bool = True) -> object:
    args = ("extend", op, flag, "1m", "--actor", "carol", "--reason", "wait longer")
    return ws.json(*args) if check else ws.run(*args, check=False)


def test_extend_names_the_deadline_each_state_waits_on(ws: Workspace) -> None:
    """--cancel-deadline resumes cancellation_unconfirmed; on result_timed_out it is refused
    (and does not extend the result deadline), naming --result-deadline, and vice versa."""
    op = ws.json(
        "submit",
        "simulator",
        "--body",
        STUCK,
        "--result-deadline",
        "500ms",
        "--cancel-deadline",
        "500ms",
    )["operation_id"]
    timed_out = ws.drive(op)
    assert timed_out["state"] == "result_timed_out"
    wrong = _extend(ws, op, "--cancel-deadline", check=False)
    assert wrong.returncode == 1 and "--result-deadline" in wrong.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in wrong.stderr  # type: ignore[attr-defined]
    assert ws.json("status", op)["result_deadline"] == timed_out["result_deadline"]

    ws.run("cancel", op, "--reason", "no longer needed")
    assert ws.drive(op)["state"] == "cancellation_unconfirmed"
    wrong = _extend(ws, op, "--result-deadline", check=False)
    assert wrong.returncode == 1 and "--cancel-deadline" in wrong.stderr  # type: ignore[attr-defined]

    resumed = _extend(ws, op, "--cancel-deadline")
    assert resumed["state"] == "cancelling"  # type: ignore[index]
    assert any(h["actor"] == "carol" and h["to"] == "cancelling" for h in ws.json("history", op))
