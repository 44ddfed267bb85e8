"""Reading commands speak JSON, take a key wherever they take an id, a repeated submit says
it found the existing operation, and `cancel` on any finished operation answers alike."""

from __future__ import annotations

import json

from cliutil import Workspace

BODY = '{"account": "feb"}'


def test_every_reading_command_has_json(ws: Workspace) -> None:
    """escalation, audit head, audit verify and provider check print parseable JSON."""
    op = ws.json("submit", "simulator", "--body", BODY)["operation_id"]
    assert ws.json("escalation", op)["operation_id"] == op
    head = ws.json("audit", "head")
    assert head["anchor"] == f"{head['seq']}:{head['head']}"
    assert ws.run("audit", "head").stdout.strip() == head["anchor"]
    assert ws.json("audit", "verify")["ok"] is True
    assert ws.json("provider", "check", "providers/simulator.toml")["name"] == "simulator"


def test_a_key_works_wherever_an_id_does(ws: Workspace) -> None:
    """status, explain, history, result, escalation and cancel accept the key."""
    op = ws.json("submit", "simulator", "--body", BODY, "--key", "feb-report")["operation_id"]
    ws.run("run", "feb-report")
    assert ws.json("status", "feb-report")["operation_id"] == op
    assert ws.json("explain", "feb-report")["operation_id"] == op
    assert ws.json("history", "feb-report")[-1]["to"] == "succeeded"
    assert ws.json("result", "feb-report")["operation_id"] == op
    assert ws.json("escalation", "feb-report")["operation_id"] == op
    missing = ws.run("status", "no-such-key", check=False)
    assert missing.returncode == 1 and "id or key 'no-such-key'" in missing.stderr


def test_resubmitting_a_key_says_it_exists(ws: Workspace) -> None:
    """The second submit under a key names the existing operation; --json has existing."""
    first = ws.json("submit", "simulator", "--body", BODY, "--key", "k1")
    assert first["existing"] is False
    again = ws.json("submit", "simulator", "--body", BODY, "--key", "k1")
    assert again["existing"] is True and again["operation_id"] == first["operation_id"]
    text = ws.run("submit", "simulator", "--body", BODY, "--key", "k1").stdout
    assert "already names this operation" in text and "nothing new was recorded" in text


def test_cancel_on_a_finished_operation_answers_alike(ws: Workspace) -> None:
    """A succeeded and a cancelled operation (with an earlier intent) get the same answer."""
    done = ws.json("submit", "simulator", "--body", BODY)["operation_id"]
    ws.run("run", done)
    slow = '{"account": "slow", "_sim": {"duration_seconds": 30}}'
    stopped = ws.json("submit", "simulator", "--body", slow, "--result-deadline", "300ms")
    ws.run("run", stopped["operation_id"], check=False)
    ws.run("cancel", stopped["operation_id"], "--reason", "stop it")
    assert ws.drive(stopped["operation_id"])["state"] == "cancelled"
    answers = []
    for op, state in ((done, "succeeded"), (stopped["operation_id"], "cancelled")):
        answer = ws.run("cancel", op, "--reason", "again", "--json", check=False)
        assert answer.returncode == 1 and answer.stdout == ""
        assert f"already ended ({state}); there is no running job to cancel" in answer.stderr
        answers.append(answer.stderr.replace(op, "OP").replace(state, "STATE"))
    assert answers[0] == answers[1]
    assert json.loads(ws.run("status", done, "--json").stdout)["cancel_intent"] is None
