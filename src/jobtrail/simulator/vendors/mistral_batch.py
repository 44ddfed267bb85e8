"""``mistral-batch``: Mistral's batch jobs under ``/mistral/v1``.

Written from Mistral's API reference (docs.mistral.ai/api, "Batch": Create, Get, List and
Cancel Batch Job, operations ``jobs_api_routes_batch_*``; "Files": download) and the
``mistralai`` SDK's models (``BatchJobIn``, ``BatchJobOut``, ``BatchJobsOut``,
``BatchJobStatus``): ``POST /v1/batch/jobs`` with ``input_files``, ``endpoint``, ``model``,
``metadata`` (text pairs) and ``timeout_hours`` (24 by default) answers a job in ``QUEUED``;
it runs (``RUNNING``) and ends ``SUCCESS``, ``FAILED`` or ``TIMEOUT_EXCEEDED`` (its
``timeout_hours`` passed: the provider stopped it by itself, keeping what it finished). A
cancel answers the job in ``CANCELLATION_REQUESTED``; it ends ``CANCELLED`` a little later,
the requests it finished kept. Counts are ``total_requests``, ``completed_requests``,
``succeeded_requests`` and ``failed_requests``; results are the JSON Lines files
``output_file`` and ``error_file`` (``GET /v1/files/{id}/content``), one line per request
with its ``custom_id``. ``GET /v1/batch/jobs`` lists jobs newest first (``page``,
``page_size``) and filters them by ``metadata``: a JSON object whose pairs a job's metadata
must hold (the SDK types the parameter as an object; sent here as JSON text). There is no
idempotency key. Errors are ``{"object": "error", "message", "type", "code"}``.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from jobtrail.simulator.answers import compact_json, json_response
from jobtrail.simulator.vendors.shared import VendorJob, unix
from jobtrail.simulator.vendors.skeleton import VendorMode

MODE = "mistral-batch"
PREFIX = "/mistral/v1"
_STATUS = {
    "pending": "QUEUED",
    "running": "RUNNING",
    "cancelling": "CANCELLATION_REQUESTED",
    "succeeded": "SUCCESS",
    "failed": "FAILED",
}
_HOUR = 3600


class MistralBatch(VendorMode):
    mode = MODE

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post(f"{PREFIX}/batch/jobs", self.create)
        app.router.add_get(f"{PREFIX}/batch/jobs", self.list)
        app.router.add_get(f"{PREFIX}/batch/jobs/{{job_id}}", self.retrieve)
        app.router.add_post(f"{PREFIX}/batch/jobs/{{job_id}}/cancel", self.cancel)
        app.router.add_get(f"{PREFIX}/files/{{file_id}}/content", self.content)

    def error(self, status: int, message: str) -> web.Response:
        kind = "invalid_request_error" if status < 500 else "api_error"
        body = {"object": "error", "message": message, "type": kind, "code": status}
        return json_response(status, body)

    def missing(self, job_id: str) -> str:
        return f"Batch job {job_id} not found"

    def invalid(self, body: Any, request: web.Request) -> str | None:
        if not isinstance(body, dict):
            return "The request body must be a JSON object"
        files = body.get("input_files")
        if not isinstance(files, list) or not files or not all(isinstance(f, str) for f in files):
            return "input_files: a non-empty list of file ids is required"
        if not isinstance(body.get("endpoint"), str):
            return "endpoint: field required"
        hours = body.get("timeout_hours", 24)
        if isinstance(hours, bool) or not isinstance(hours, int) or hours < 1:
            return "timeout_hours: a whole number of hours, at least 1"
        metadata = body.get("metadata")
        if metadata is not None and (
            not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values())
        ):
            return "metadata: an object of text values"
        return None

    def made(self, job: VendorJob, request: web.Request) -> None:
        job.deadline_ts = job.created_ts + int(job.body.get("timeout_hours", 24)) * _HOUR

    def too_late(self, job: VendorJob, request: web.Request) -> web.Response:
        return self.error(400, f"Batch job {job.job_id} is already {self._status(job)}")

    async def list(self, request: web.Request) -> web.Response:
        refusal = await self.refused(request)
        if refusal is not None:
            return refusal
        wanted: dict[str, Any] = {}
        if "metadata" in request.query:
            try:
                wanted = json.loads(request.query["metadata"])
            except ValueError:
                return self.error(422, "metadata: a JSON object is expected")
            if not isinstance(wanted, dict):
                return self.error(422, "metadata: a JSON object is expected")
        page = max(0, int(request.query.get("page", "0") or 0))
        size = max(1, min(100, int(request.query.get("page_size", "100") or 100)))
        jobs = self.listed(request, lambda j: _holds(j.body.get("metadata") or {}, wanted))
        shown = [self.render(j, request) for j in jobs[page * size : (page + 1) * size]]
        return json_response(200, {"object": "list", "data": shown, "total": len(jobs)})

    async def content(self, request: web.Request) -> web.Response:
        refusal = await self.refused(request)
        file = self.state.files.get(request.match_info["file_id"])
        if refusal is not None:
            response = refusal
        elif file is None:
            response = self.error(404, f"File {request.match_info['file_id']} not found")
        else:
            response = web.Response(status=200, body=file[1], content_type=file[0])
        self.state.record(MODE, "result", request, response.status)
        return response

    # -- the BatchJobOut object ----------------------------------------------------------

    def _status(self, job: VendorJob) -> str:
        if job.phase == "cancelled":
            return "TIMEOUT_EXCEEDED" if job.timed_out else "CANCELLED"
        return _STATUS[job.phase]

    def _done(self, job: VendorJob) -> tuple[int, int]:
        """(succeeded, failed) requests once the job has ended."""
        f = job.faults
        if job.phase == "succeeded":
            return f.items - f.failed_items, f.failed_items
        if job.phase == "failed":
            return 0, 0
        if job.phase == "cancelled":
            finished = f.finished_before_expiry if job.timed_out else f.in_flight_items
            return min(finished, f.items - f.failed_items), 0
        return 0, 0

    def render(self, job: VendorJob, request: web.Request) -> dict[str, Any]:
        status, f = self._status(job), job.faults
        ok, bad = self._done(job) if job.terminal else (0, 0)
        body: dict[str, Any] = job.body
        out: dict[str, Any] = {
            "id": job.job_id,
            "object": "batch",
            "input_files": body["input_files"],
            "metadata": body.get("metadata"),
            "endpoint": body["endpoint"],
            "model": body.get("model"),
            "agent_id": None,
            "errors": [],
            "status": status,
            "created_at": unix(job.created_ts),
            "total_requests": f.items,
            "completed_requests": ok + bad,
            "succeeded_requests": ok,
            "failed_requests": bad,
            "started_at": unix(job.created_ts) if job.phase != "pending" else None,
            "completed_at": unix(job.ended_ts),
            "output_file": None,
            "error_file": None,
        }
        if status == "FAILED":
            out["errors"] = [{"message": "The input file is not valid JSON Lines", "count": 1}]
        if job.terminal and status != "FAILED":
            out["output_file"] = self._file(job, "output", range(ok))
            out["error_file"] = self._file(job, "error", range(f.items - bad, f.items))
        return out

    def _file(self, job: VendorJob, kind: str, requests: range) -> str | None:
        if not requests:
            return None
        file_id = job.extra.get(kind)
        if file_id is None:
            file_id = job.extra[kind] = self.state.new_id("file-")
            lines = [_line(job, n, ok=kind == "output") for n in requests]
            self.state.files[file_id] = ("application/octet-stream", b"".join(lines))
        return str(file_id)


def _holds(metadata: dict[str, Any], wanted: dict[str, Any]) -> bool:
    return all(metadata.get(k) == v for k, v in wanted.items())


def _line(job: VendorJob, n: int, *, ok: bool) -> bytes:
    if ok:
        response: dict[str, Any] = {
            "status_code": 200,
            "body": {
                "id": f"cmpl-{job.job_id}-{n}",
                "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            },
        }
        line = {"id": f"req-{n}", "custom_id": str(n), "response": response, "error": None}
    else:
        error = {"message": "Invalid request body", "code": 3000}
        line = {"id": f"req-{n}", "custom_id": str(n), "response": None, "error": error}
    return compact_json(line) + b"\n"
