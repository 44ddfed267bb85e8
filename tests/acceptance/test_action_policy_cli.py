"""The action policy through the CLI: `--policy FILE` (or JOBTRAIL_POLICY) decides who may
act, and a refusal is one sentence and an audit entry."""

from __future__ import annotations

import json
import sqlite3

from cliutil import Workspace


def test_a_policy_file_refuses_a_cancel_and_the_refusal_is_audited(ws: Workspace) -> None:
    """With a policy that lets people only submit, `cancel` exits 1 naming the rule, records
    no intent, and leaves a policy.refused entry; without the file the same cancel works."""
    policy = ws.root / "policy.toml"
    policy.write_text('[kinds.person]\nsubmit = "any"\n', encoding="utf-8")
    sent = ws.json("submit", "simulator", "--body", '{"account": "p1"}', "--key", "p1")
    op_id = sent["operation_id"]
    refused = ws.run("--policy", str(policy), "cancel", op_id, "--reason", "r", check=False)
    assert refused.returncode == 1
    assert "tester may not cancel" in refused.stderr and "people may not cancel" in refused.stderr
    by_env = ws.run("cancel", op_id, "--reason", "r", check=False, JOBTRAIL_POLICY=str(policy))
    assert by_env.returncode == 1
    with sqlite3.connect(ws.db) as conn:
        kinds = [json.loads(e)["kind"] for (e,) in conn.execute("SELECT entry FROM audit_log")]
    assert kinds.count("policy.refused") == 2 and "cancel.intent" not in kinds
    ws.run("cancel", op_id, "--reason", "the default lets people cancel")
    ws.run("audit", "verify", "--replay")  # refusals keep the chain and the histories provable
