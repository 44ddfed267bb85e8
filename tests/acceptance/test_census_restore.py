"""The recovery procedure of docs/census.md, as a user runs it: back up a ledger, submit and
create more jobs, restore the backup, take the census: every job created after the backup is
unknown here; adopted, each is followed exactly once and collected; never a second job."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

from jobtrail.simulator import SimulatorThread

from cliutil import JOBTRAIL
from harness import SECRET

BODY = json.dumps(
    {"input_file_id": "file-1", "endpoint": "/v1/chat/completions", "completion_window": "24h"}
)


def jobtrail(cwd: Path, env: dict[str, str], *args: str, code: int = 0) -> str:
    """The CLI in `cwd`, as a person (`alice`) runs it; its output."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("JOBTRAIL_")}
    done = subprocess.run(
        [JOBTRAIL, *args],
        cwd=cwd,
        env=clean | {"JOBTRAIL_ACTOR": "alice"} | env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == code, f"jobtrail {' '.join(args)}: {done.stderr}"
    return done.stdout


def run_batch(cwd: Path, env: dict[str, str]) -> dict[str, Any]:
    """A batch submitted and run to its collected result."""
    op = json.loads(jobtrail(cwd, env, "submit", "openai-batch", "--body", BODY, "--json"))
    ended = json.loads(jobtrail(cwd, env, "run", op["operation_id"], "--json"))
    assert ended["state"] == "succeeded", ended
    return dict(ended)


def test_a_restored_ledger_finds_adopts_and_follows_the_jobs_made_since(tmp_path: Path) -> None:
    """Backup after one batch, two more batches, restore: the census finds the two unknown
    here, adopting them makes each followed once, and the worker collects them."""
    with SimulatorThread(token=SECRET) as sim:
        faults = json.dumps({"retry_after": 0}).encode()
        request = urllib.request.Request(
            f"{sim.base_url}/_sim/vendors/openai-batch/faults", data=faults, method="POST"
        )
        request.add_header("Content-Type", "application/json")
        urllib.request.urlopen(request, timeout=10).close()
        env = {"JOBTRAIL_OPENAI_BASE_URL": f"{sim.base_url}/openai", "OPENAI_API_KEY": SECRET}
        first = run_batch(tmp_path, env)
        jobtrail(tmp_path, env, "backup", "backup.db")
        later = [run_batch(tmp_path, env) for _ in range(2)]

        for leftover in tmp_path.glob("jobtrail.db*"):
            leftover.unlink()
        shutil.copy(tmp_path / "backup.db", tmp_path / "jobtrail.db")

        census = json.loads(jobtrail(tmp_path, env, "census", "openai-batch", "--json"))
        found = {c: {j["job_id"] for j in census["jobs"] if j["category"] == c} for c in
                 census["counts"]}  # fmt: skip
        assert census["reach"]["complete"], census["reach"]
        assert found["unknown_here"] == {op["remote_job_id"] for op in later}
        assert found["followed"] == {first["remote_job_id"]}
        assert census["counts"]["second_job"] == 0

        adopt = [a for op in later for a in ("--adopt", op["remote_job_id"])]
        acted = json.loads(
            jobtrail(
                tmp_path, env, "census", "openai-batch", *adopt, "--reason", "restored", "--json"
            )
        )
        assert [a["refused"] for a in acted] == [None, None]
        for item in acted:
            collected = json.loads(jobtrail(tmp_path, env, "run", item["operation_id"], "--json"))
            assert collected["state"] == "succeeded", collected

        again = json.loads(jobtrail(tmp_path, env, "census", "openai-batch", "--json"))
        assert again["counts"]["unknown_here"] == 0 and again["counts"]["second_job"] == 0
        assert again["counts"]["followed"] == 3
        listed = json.loads(jobtrail(tmp_path, env, "list", "--json"))
        rows = listed["operations"] if isinstance(listed, dict) else listed
        followers = Counter(op["remote_job_id"] for op in rows)
        jobs = {first["remote_job_id"], *(op["remote_job_id"] for op in later)}
        assert {job: followers[job] for job in jobs} == dict.fromkeys(jobs, 1)
        jobtrail(tmp_path, env, "audit", "verify")
