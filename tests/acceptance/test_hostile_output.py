"""Terminal escapes from a provider never reach a terminal: the CLI as a subprocess, against
the simulator answering with escape sequences, C1 controls and bidi overrides in its state
words, progress, error messages and request ids."""

from __future__ import annotations

import json
import re

import pytest

from jobtrail.simulator.faults import HOSTILE_HEADER_TEXT, HOSTILE_TEXT

from cliutil import Workspace

# ESC, BEL, CR, backspace and every other C0 control but newline, DEL, C1 controls,
# bidi embeddings, overrides and isolates
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
WIDE = {"COLUMNS": "1000"}  # no wrapping, so an escape shown as text stays in one piece


def _hostile_provider(ws: Workspace) -> None:
    """The simulator's provider file, mapping the hostile state words to their meaning."""
    file = ws.root / "providers" / "simulator.toml"
    words = {
        f"{word}{HOSTILE_TEXT}": meaning
        for word, meaning in (
            ("queued", "running"),
            ("running", "running"),
            ("succeeded", "succeeded"),
            ("failed", "failed"),
        )
    }
    # JSON string escapes (\u001b, \r, \b) are valid TOML basic-string escapes
    entries = "".join(f"{json.dumps(word)} = {json.dumps(m)}\n" for word, m in words.items())
    text = file.read_text().replace("[states]\n", "[states]\n" + entries, 1)
    file.write_text(text)


def _clean(output: str, what: str) -> None:
    found = RAW.search(output)
    assert found is None, f"{what}: raw {found.group()!r} in {output[:2000]!r}"


@pytest.mark.slow  # every human output of many CLI runs
def test_provider_escapes_are_neutralized_in_every_human_output(ws: Workspace) -> None:
    """`run`, `list`, `status`, `history`, `explain`, `result` and `escalation` print no raw
    control, C1 or bidi character from a provider; they show visible escapes instead. The
    JSON output is exact: it decodes to the provider's very words."""
    _hostile_provider(ws)
    body = json.dumps({"account": "a", "_sim": {"hostile_text": True}})
    done = ws.json("submit", "simulator", "--body", body)["operation_id"]
    rejected = {"status": 400, "message": f"no such account{HOSTILE_TEXT}"}
    body = json.dumps({"account": "b", "_sim": {"reject_create": rejected}})
    refused = ws.json("submit", "simulator", "--body", body)["operation_id"]
    outputs = {
        f"run {op}": ws.run("run", op, check=False, **WIDE).stdout for op in (done, refused)
    }  # the live display and its last line
    assert ws.json("status", done)["state"] == "succeeded"
    assert ws.json("status", refused)["state"] == "failed"
    for op in (done, refused):
        for command in ("status", "history", "explain", "escalation", "run"):
            result = ws.run(command, op, check=command != "run", **WIDE)
            outputs[f"{command} {op}"] = result.stdout + result.stderr
    outputs["list"] = ws.run("list", **WIDE).stdout
    outputs["result"] = ws.run("result", done, **WIDE).stdout
    for what, output in outputs.items():
        _clean(output, what)
    assert "\\x1b" in outputs["list"] and "\\u202e" in outputs["list"]
    assert "\\x1b]8;;http://evil.example/" in outputs[f"explain {done}"]
    assert "\\x9b" in outputs[f"explain {done}"]  # the request id's C1 control
    # JSON: nothing raw on the terminal either, and exactly the provider's words when read
    for command in ("status", "explain", "list"):
        text = ws.run(command, *([done] if command != "list" else []), "--json").stdout
        _clean(text, f"{command} --json")
    status = ws.json("status", done)
    assert status["remote_state"] == f"succeeded{HOSTILE_TEXT}"
    assert status["progress"]["note"] == HOSTILE_TEXT
    escalation = json.loads(ws.run("escalation", done).stdout)
    assert any(HOSTILE_HEADER_TEXT in rid for rid in escalation["provider_request_ids"])
    rejection = json.loads(ws.run("escalation", refused).stdout)["request_history"]
    assert rejection[0]["detail"]["body"]["message"] == rejected["message"]
