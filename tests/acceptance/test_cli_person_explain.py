"""`explain` as a person reads it: who asked whom for what in a sentence, the request body
(redacted), the provider's own reason for a refusal, progress as "done/total", and times
relative to now with the absolute time beside them."""

from __future__ import annotations

import json
import re

from cliutil import Workspace


def test_explain_shows_the_rejection_reason_and_the_body(ws: Workspace) -> None:
    """A refused create: the provider's message and the request body are both shown."""
    rejected = {"status": 422, "message": "account acct_9 is closed"}
    body = json.dumps({"account": "acct_9", "_sim": {"reject_create": rejected}})
    op = ws.json(
        "submit",
        "simulator",
        "--body",
        body,
        "--key",
        "closed-account",
        "--reason",
        "monthly report",
        "--authorized-by",
        "alice",
    )["operation_id"]
    ws.run("run", op, check=False)
    text = ws.run("explain", op).stdout
    # the request's target names where it went: the base URL and the create path
    asked = r"asked:      tester asked simulator for POST http://127\.0\.0\.1:\d+/v1/reports "
    assert re.search(asked + r"\(key closed-account\), authorized by alice: monthly report", text)
    # the provider's code and message, as every surface says them (core/failure.py)
    said = "rejected: account acct_9 is closed (create answered HTTP 422)"
    why = f"why:        the provider said {said}"
    assert why in text, text
    assert '"account": "acct_9"' in text  # the body line
    document = ws.json("explain", op)
    assert document["request_body"]["account"] == "acct_9"
    assert document["failure_reason"] == said


def test_explain_shows_progress_and_relative_times(ws: Workspace) -> None:
    """Progress reads "3/3"; deadlines read "in …" with the ISO time beside them."""
    op = ws.json("submit", "simulator", "--body", '{"account": "p"}')["operation_id"]
    pending = ws.run("explain", op).stdout
    deadline = r"\d+ (s|min|h|days) \(\d{4}-\d\d-\d\dT[\d:.]+Z\)"
    assert re.search(rf"deadlines:  create in {deadline}; result in {deadline}", pending)
    ws.run("run", op)
    text = ws.run("explain", op).stdout
    assert re.search(r"progress \d+/\d+", text), text
    # finished: no deadline bears on it any more, so none is shown
    assert "deadlines:  none in force (the operation ended)" in text, text
    assert "{'" not in text and '{"completed"' not in text
    status = ws.run("status", op).stdout
    assert re.search(r"created_at\s+\S+Z \((now|\d+ (s|min) ago)\)", status), status
    assert re.search(r"result_deadline\s+\S+Z \(in \d+ min\)", status), status
    assert re.search(r"progress\s+\d+/\d+", status), status
