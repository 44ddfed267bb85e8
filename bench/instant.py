"""A code provider that answers at once, so a benchmark measures the ledger and not HTTP.

It walks every operation down the happy path the simulator's jobs take: create is accepted,
the first status read says running, the second says succeeded, the result checks out. Its
recorded requests and response details have the shape and size of the HTTP provider's.
"""

from __future__ import annotations

from typing import Any

from jobtrail.core import outcomes as o
from jobtrail.core.model import AttemptKind, Capabilities, Operation, ResultSummary
from jobtrail.core.states import RemoteStatus, State
from jobtrail.providers.protocol import Reply

NAME = "instant"
BASE = "http://instant.invalid"


class InstantProvider:
    name = NAME

    def __init__(self, capabilities: Capabilities) -> None:
        self.capabilities = capabilities
        self._answers = 0

    def describe(self, kind: AttemptKind, op: Operation) -> dict[str, Any]:
        path = "/v1/reports" if kind is AttemptKind.CREATE else f"/v1/jobs/{op.remote_job_id}"
        headers = {
            "Accept": "application/json",
            "X-Trace-ID": op.trace_id,
            "Authorization": "[redacted]",
        }
        if kind is AttemptKind.CREATE:
            headers["Idempotency-Key"] = op.idempotency_token
            headers["X-Client-Reference"] = op.operation_id
        method = "POST" if kind is AttemptKind.CREATE else "GET"
        return {"method": method, "url": BASE + path, "headers": headers}

    async def call(self, kind: AttemptKind, op: Operation) -> Reply:
        self._answers += 1
        request_id = f"req_sim_{self._answers:08d}"
        job_id = "job_" + op.operation_id[-16:].lower()
        outcome: o.CallOutcome
        if kind is AttemptKind.CREATE:
            body: dict[str, Any] = {"job_id": job_id, "state": "queued"}
            outcome = o.Accepted(
                job_id=job_id,
                remote_state="queued",
                remote_status=RemoteStatus.RUNNING,
                status_url=f"/v1/jobs/{job_id}",
                http_status=202,
                request_id=request_id,
            )
        elif kind is AttemptKind.STATUS:
            done = op.state is State.OBSERVING
            word = "succeeded" if done else "running"
            progress = {"completed": 3 if done else 1, "total": 3}
            body = {"job_id": job_id, "state": word, "progress": progress}
            outcome = o.Observed(
                remote_state=word,
                remote_status=RemoteStatus.SUCCEEDED if done else RemoteStatus.RUNNING,
                progress=progress,
                provider_updated_at="2026-01-01T00:00:00.000000Z",
                http_status=200,
                request_id=request_id,
            )
        else:
            body = {"rows": 3}
            outcome = o.ResultChecked(
                summary=ResultSummary(
                    valid=True,
                    content_type="text/csv",
                    sha256="0" * 64,
                    size=120,
                    location=f"results/00/{'0' * 64}",
                    records=3,
                    checks=("content type", "checksum", "record count"),
                )
            )
        detail = {
            "status": getattr(outcome, "http_status", 200),
            "elapsed_ms": 0.4,
            "headers": {"Content-Type": "application/json", "X-Request-ID": request_id},
            "body": body,
        }
        return Reply(outcome=outcome, detail=detail)
