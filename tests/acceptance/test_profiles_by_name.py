"""The shipped profiles work by name from an empty directory, as after a plain install."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobtrail.simulator import SimulatorThread

from cliutil import JOBTRAIL
from harness import SECRET

SHIPPED = {
    "simulator",
    "airflow",
    "openai-batch",
    "anthropic-batch",
    "gemini-batch",
    "google-lro",
    "azure-ai",
    "azure-arm-put",
    "azure-arm-patch",
    "azure-arm-delete",
    "azure-arm-post",
    "azure-arm-post-async",
    "mistral-batch",
    "openai-responses",
    "replicate",
    "vertex-batch",
}


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorThread]:
    with SimulatorThread(token=SECRET) as running:
        yield running


def jobtrail(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run the CLI in `cwd` with no JOBTRAIL_* settings but these: nothing points at a file."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("JOBTRAIL_")}
    done = subprocess.run(
        [JOBTRAIL, *args],
        cwd=cwd,
        env=clean | {"JOBTRAIL_ACTOR": "tester"} | env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"jobtrail {' '.join(args)}: {done.stderr}"
    return done


def admin(base_url: str, path: str, body: Any) -> None:
    request = urllib.request.Request(base_url + path, data=json.dumps(body).encode(), method="POST")
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 200


def test_provider_list_and_check_by_name_from_an_empty_directory(tmp_path: Path) -> None:
    """`provider list` names every shipped profile, one a line, and each checks by name."""
    listed = jobtrail(tmp_path, "provider", "list").stdout.splitlines()
    assert {line.split()[0] for line in listed} == SHIPPED
    assert all(len(line.split(maxsplit=1)) == 2 for line in listed)
    anthropic = json.loads(
        jobtrail(tmp_path, "provider", "check", "anthropic-batch", "--json").stdout
    )
    assert anthropic["at_most_once_provable"] is False
    assert "needs_human" in json.dumps(anthropic["guarantees"])
    openai = json.loads(jobtrail(tmp_path, "provider", "check", "openai-batch", "--json").stdout)
    assert openai["at_most_once_provable"] is True
    shown = jobtrail(tmp_path, "provider", "show", "openai-batch").stdout
    assert 'name = "openai-batch"' in shown and "OPENAI_API_KEY" in shown
    assert list(tmp_path.iterdir()) == [], "reading profiles wrote into the directory"


def test_openai_batch_runs_by_name_from_an_empty_directory(
    tmp_path: Path, sim: SimulatorThread
) -> None:
    """`submit openai-batch` + a worker run a batch to its collected result, by name."""
    # answer every poll with Retry-After: 0, so the 30 s first poll of a batch costs nothing
    admin(sim.base_url, "/_sim/vendors/openai-batch/faults", {"retry_after": 0})
    env = {
        "JOBTRAIL_OPENAI_BASE_URL": f"{sim.base_url}/openai",
        "OPENAI_API_KEY": SECRET,
    }
    body = {
        "input_file_id": "file-1",
        "endpoint": "/v1/chat/completions",
        "completion_window": "24h",
    }
    submitted = json.loads(
        jobtrail(
            tmp_path, "submit", "openai-batch", "--body", json.dumps(body), "--json", **env
        ).stdout
    )
    jobtrail(tmp_path, "worker", "--until-idle", **env)
    status = json.loads(jobtrail(tmp_path, "status", submitted["operation_id"], "--json").stdout)
    assert status["state"] == "succeeded", status
    assert SECRET not in (tmp_path / "jobtrail.db").read_bytes().decode("latin-1")


def test_simulator_profile_runs_by_name_from_an_empty_directory(
    tmp_path: Path, sim: SimulatorThread
) -> None:
    """`submit simulator` works with no ./providers folder: the profile ships in the package."""
    env = {"JOBTRAIL_SIMULATOR_BASE_URL": sim.base_url, "REPORTS_API_TOKEN": SECRET}
    body = {"account": "acct_1", "_sim": {"duration_polls": 1, "status_retry_after": 0}}
    submitted = json.loads(
        jobtrail(
            tmp_path, "submit", "simulator", "--body", json.dumps(body), "--json", **env
        ).stdout
    )
    jobtrail(tmp_path, "worker", "--until-idle", **env)
    status = json.loads(jobtrail(tmp_path, "status", submitted["operation_id"], "--json").stdout)
    assert status["state"] == "succeeded", status
