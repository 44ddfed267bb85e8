"""Provider files whose create has jobtrail write into the body, as users write them for
Ray Jobs (the submission id is the token) and an Airflow-like API (the DAG run id is the
token; the client reference rides in the run's `conf`)."""

from __future__ import annotations

from pathlib import Path

RAY = """
name = "ray"
base_url = "http://127.0.0.1:8265"

[create]
path = "/api/jobs/"
idempotency = { field = "submission_id" }
job_id = "submission_id"

[status]
path = "/api/jobs/{job_id}"
state = "status"

[states]
PENDING = "running"
RUNNING = "running"
SUCCEEDED = "succeeded"
FAILED = "failed"
STOPPED = "cancelled"

[reconcile]
same_token = true
"""

AIRFLOWISH = """
name = "airflowish"
base_url = "http://127.0.0.1:8080"

[create]
path = "/api/v1/dags/report/dagRuns"
idempotency = { field = "dag_run_id" }
client_reference = { field = "conf.jobtrail_reference" }
job_id = "dag_run_id"
state = "state"

[status]
path = "/api/v1/dags/report/dagRuns/{job_id}"
state = "state"

[states]
queued = "running"
running = "running"
success = "succeeded"
failed = "failed"

[reconcile]
same_token = true
"""

# (provider, a body holding a value where jobtrail writes, the field named in the refusal)
REFUSED = [
    ("ray", {"entrypoint": "python report.py", "submission_id": "mine-1"}, "submission_id"),
    ("airflowish", {"dag_run_id": "manual-1", "conf": {}}, "dag_run_id"),
    ("airflowish", {"conf": {"jobtrail_reference": "mine"}}, "conf.jobtrail_reference"),
]


def write_providers(folder: Path) -> dict[str, Path]:
    """The two files in `folder`, by provider name."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {"ray": folder / "ray.toml", "airflowish": folder / "airflowish.toml"}
    files["ray"].write_text(RAY)
    files["airflowish"].write_text(AIRFLOWISH)
    return files
