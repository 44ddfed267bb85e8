"""A keyed chain stays keyed, as an operator meets it (issue 19): a command run without the
ledger's audit key, or with another, is refused with one sentence naming JOBTRAIL_AUDIT_KEY
(never the key) and writes nothing; `audit verify` says the key is wrong instead of blaming
an innocent entry; with the key, the chain verifies."""

from __future__ import annotations

import json

import pytest

from cliutil import Workspace

KEY = "s3cret-audit-key-0123456789abcdef"


@pytest.mark.slow  # every command against a keyed ledger
@pytest.mark.parametrize("wrong", ["", "another-key-fedcba9876543210"], ids=["none", "other"])
def test_a_keyed_ledger_refuses_commands_without_its_key(ws: Workspace, wrong: str) -> None:
    """submit, cancel and the worker without the key (or with another) exit non-zero with
    the one sentence and leave the chain as it was; `audit verify` without it exits 1
    naming the key, not an entry; with the key, everything verifies and the work goes on."""
    op = ws.json("submit", "simulator", "--body", '{"n": 1}', JOBTRAIL_AUDIT_KEY=KEY)
    before = ws.json("audit", "head", JOBTRAIL_AUDIT_KEY=KEY)
    for args in (
        ["submit", "simulator", "--body", '{"n": 2}'],
        ["cancel", op["operation_id"], "--reason", "r"],
        ["worker", "--until-idle"],
    ):
        done = ws.run(*args, check=False, JOBTRAIL_AUDIT_KEY=wrong)
        assert done.returncode != 0, args
        assert "JOBTRAIL_AUDIT_KEY" in done.stderr and "keyed" in done.stderr, done.stderr
        assert KEY not in done.stdout + done.stderr
        assert not wrong or wrong not in done.stdout + done.stderr
    assert ws.json("audit", "head", JOBTRAIL_AUDIT_KEY=KEY) == before
    verdict = ws.run("audit", "verify", check=False, JOBTRAIL_AUDIT_KEY=wrong)
    assert verdict.returncode == 1
    assert "JOBTRAIL_AUDIT_KEY" in verdict.stdout + verdict.stderr
    assert "entry #" not in verdict.stdout + verdict.stderr
    report = json.loads(
        ws.run("audit", "verify", "--json", check=False, JOBTRAIL_AUDIT_KEY=wrong).stdout
    )
    assert report["ok"] is False and "JOBTRAIL_AUDIT_KEY" in report["problem"]
    assert report["seq"] is None
    assert "audit log intact" in ws.run("audit", "verify", JOBTRAIL_AUDIT_KEY=KEY).stdout
    ws.run("worker", "--until-idle", JOBTRAIL_AUDIT_KEY=KEY)
    assert ws.json("status", op["operation_id"])["state"] == "succeeded"
    assert "audit log intact" in ws.run("audit", "verify", JOBTRAIL_AUDIT_KEY=KEY).stdout
