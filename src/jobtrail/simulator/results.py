"""Result bodies of simulated jobs: a small CSV with per-item outcomes."""

from __future__ import annotations

import hashlib
from typing import Any

from jobtrail.simulator.records import SimJob

CSV_HEADER = "id,status,value"


def result_rows(job: SimJob) -> list[dict[str, Any]]:
    """Per-item outcomes; the last ``failed_items`` items failed, the rest carry a value
    (``i * 10``, or with ``distinct_result`` a number derived from the job id and item)."""
    total = job.faults.items
    first_failed = total - job.faults.failed_items
    rows: list[dict[str, Any]] = []
    for i in range(1, total + 1):
        if i > first_failed:
            rows.append({"id": f"item-{i}", "status": "failed", "value": ""})
        else:
            rows.append({"id": f"item-{i}", "status": "succeeded", "value": _value(job, i)})
    return rows


def _value(job: SimJob, item: int) -> str:
    if not job.faults.distinct_result:
        return str(item * 10)
    digest = hashlib.sha256(f"{job.job_id}/{item}".encode()).digest()
    return str(int.from_bytes(digest[:4], "big"))


def result_csv(job: SimJob) -> tuple[bytes, str]:
    """The CSV body and its sha256 hex, built once per job (benchmarks read many results)."""
    if job.result_cache is None:
        lines = [CSV_HEADER]
        lines.extend(f"{r['id']},{r['status']},{r['value']}" for r in result_rows(job))
        body = ("\n".join(lines) + "\n").encode()
        job.result_cache = (body, hashlib.sha256(body).hexdigest())
    return job.result_cache


def echoed_csv(job: SimJob, token: str) -> tuple[bytes, str]:
    """The CSV body with `token` in every item id (the echo_credentials fault), not cached."""
    lines = [CSV_HEADER]
    lines.extend(f"{r['id']}-{token},{r['status']},{r['value']}" for r in result_rows(job))
    body = ("\n".join(lines) + "\n").encode()
    return body, hashlib.sha256(body).hexdigest()
