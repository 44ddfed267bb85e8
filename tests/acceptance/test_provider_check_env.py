"""`jobtrail provider check` as a user runs it: what the Airflow profile's new keys promise,
every environment variable a provider needs (and whether it is set), and a file with a
placeholder nothing fills refused instead of being called provable."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from cliutil import JOBTRAIL


def check(cwd: Path, name: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("JOBTRAIL_", "AIRFLOW"))}
    return subprocess.run(
        [JOBTRAIL, "provider", "check", name, "--json"],
        cwd=cwd,
        env=clean | env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def guarantees(cwd: Path, name: str, **env: str) -> dict[str, Any]:
    done = check(cwd, name, **env)
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def test_the_airflow_profile_says_what_it_promises(tmp_path: Path) -> None:
    """Lookup by our key, the PATCH with its body, 409 = exists, and its two variables."""
    said = guarantees(tmp_path, "airflow")
    assert said["at_most_once_provable"] is True
    lines = said["guarantees"]
    assert (
        "lookup by our key (GET /api/v2/dags/{dag_id}/dagRuns/{idempotency_token})"
        in lines["reconciliation"]
    )
    assert lines["cancel"].startswith("PATCH /api/v2/dags/{dag_id}/dagRuns/{job_id} with")
    assert '"state": "failed"' in lines["cancel"]
    assert "409 = a job exists under our key" in lines["create answers"]
    assert "xcomEntries/return_value, its `value` is the result" in lines["result"]
    assert "404 = failed" in lines["state"]
    assert (
        "$JOBTRAIL_AIRFLOW_BASE_URL (base URL; not set: http://localhost:8080 is used)"
        in (lines["environment"])
    )
    assert "$AIRFLOW_API_TOKEN (credential; NOT SET)" in lines["environment"]
    set_now = guarantees(tmp_path, "airflow", AIRFLOW_API_TOKEN="t" * 20)
    assert "$AIRFLOW_API_TOKEN (credential; set)" in set_now["guarantees"]["environment"]


def test_a_placeholder_base_url_is_named_as_a_required_variable(tmp_path: Path) -> None:
    lines = guarantees(tmp_path, "azure-ai")["guarantees"]
    assert (
        "$JOBTRAIL_AZURE_AI_BASE_URL (base URL; NOT SET, required: the base URL is a placeholder)"
        in lines["environment"]
    )
    assert "$AZURE_AI_KEY (credential; NOT SET)" in lines["environment"]
    given = guarantees(tmp_path, "azure-ai", JOBTRAIL_AZURE_AI_BASE_URL="https://x.example")
    assert "$JOBTRAIL_AZURE_AI_BASE_URL (base URL; set)" in given["guarantees"]["environment"]


def test_a_token_command_is_named_with_its_program(tmp_path: Path) -> None:
    (tmp_path / "cli-token.toml").write_text(
        'name = "cli-token"\nbase_url = "https://api.example.com"\n'
        'auth = { header = "Authorization", prefix = "Bearer ", '
        'command = ["no-such-token-cli", "print-token"], lifetime = "50m" }\n'
        '[create]\npath = "/v1/jobs"\n[status]\npath = "/v1/jobs/{job_id}"\n'
    )
    lines = guarantees(tmp_path, "cli-token.toml")["guarantees"]
    assert (
        lines["environment"] == "token command no-such-token-cli (NOT FOUND on PATH); no variable"
    )
    assert "the command `no-such-token-cli` (its arguments not shown)" in lines["credentials"]
    assert "print-token" not in lines["credentials"]  # an argument may hold a secret
    assert "50m at most; fetched again after a 401; never stored" in lines["credentials"]


def test_a_placeholder_nothing_fills_is_refused_not_called_provable(tmp_path: Path) -> None:
    (tmp_path / "typo.toml").write_text(
        'name = "typo"\nbase_url = "https://api.example.com"\n'
        '[create]\npath = "/v1/jobs"\nidempotency = { header = "Idempotency-Key" }\n'
        '[status]\npath = "/v1/jobs/{jobid}"\n[reconcile]\nsame_token = true\n'
    )
    done = check(tmp_path, "typo.toml")
    assert done.returncode != 0 and "provable" not in done.stdout
    assert "status.path: {jobid} is not a placeholder jobtrail can fill here" in done.stderr


def test_submit_to_a_placeholder_base_url_is_refused_naming_the_variable(tmp_path: Path) -> None:
    """`jobtrail submit azure-ai` without JOBTRAIL_AZURE_AI_BASE_URL: refused, nothing
    recorded, and no warning that says the operation is recorded."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("JOBTRAIL_", "AZURE"))}
    done = subprocess.run(
        [JOBTRAIL, "submit", "azure-ai", "--body", '{"analysisInput": {}}'],
        cwd=tmp_path,
        env=clean | {"JOBTRAIL_ACTOR": "tester", "JOBTRAIL_DB": str(tmp_path / "l.db")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "set the environment variable JOBTRAIL_AZURE_AI_BASE_URL" in done.stderr
    assert "is recorded" not in done.stderr and "Recorded" not in done.stdout
