"""``openai-batch``: the OpenAI Batch API under ``/openai/v1``.

From OpenAI's API reference (Batch, Files): ``POST /v1/batches`` answers 200 with a Batch
object in ``validating``; it moves through ``in_progress`` (and ``finalizing``) to
``completed``, ``failed`` (validation errors in ``errors.data``) or ``expired``. A cancel
answers the Batch in ``cancelling`` and it stays there for a while (up to 10 minutes)
before ``cancelled``, with partial results in the output file. Results are files: the
successful requests in ``output_file_id``, the failed ones in ``error_file_id``, each a JSON
Lines file read with ``GET /v1/files/{id}/content`` whose lines carry the ``custom_id``. A
batch whose 24 h window passes is ``expired``: the requests it finished are in the output
file, the unfinished ones in the error file with ``response: null`` and the error code
``batch_expired``.
Creates have no idempotency key; the client's own words go in ``metadata`` (16 pairs at
most), and ``GET /v1/batches`` lists batches newest first (``limit``, ``after``).
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from jobtrail.simulator.answers import compact_json, json_response
from jobtrail.simulator.vendors.shared import VendorJob, unix
from jobtrail.simulator.vendors.skeleton import VendorMode

MODE = "openai-batch"
PREFIX = "/openai/v1"
_ENDPOINTS = ("/v1/responses", "/v1/chat/completions", "/v1/embeddings", "/v1/completions")
_DAY = 24 * 3600


def _error(status: int, message: str, kind: str = "invalid_request_error") -> web.Response:
    return json_response(
        status, {"error": {"message": message, "type": kind, "param": None, "code": None}}
    )


class OpenAIBatch(VendorMode):
    mode = MODE
    id_prefix = "batch_"

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post(f"{PREFIX}/batches", self.create)
        app.router.add_get(f"{PREFIX}/batches", self.list)
        app.router.add_get(f"{PREFIX}/batches/{{job_id}}", self.retrieve)
        app.router.add_post(f"{PREFIX}/batches/{{job_id}}/cancel", self.cancel)
        app.router.add_get(f"{PREFIX}/files/{{file_id}}/content", self.content)

    def error(self, status: int, message: str) -> web.Response:
        if status >= 500:
            message = "The server had an error processing your request."
            return _error(status, message, "server_error")
        return _error(status, message)

    async def refused(self, request: web.Request) -> web.Response | None:
        return None if self.authorized(request) else _error(401, "Incorrect API key provided.")

    def invalid(self, body: Any, request: web.Request) -> str | None:
        return _invalid(body)

    def made(self, job: VendorJob, request: web.Request) -> None:
        job.tag = json.dumps(job.body.get("metadata") or {}, sort_keys=True)

    def missing(self, job_id: str) -> str:
        return f"No batch found with id '{job_id}'."

    def too_late(self, job: VendorJob, request: web.Request) -> web.Response:
        return _error(400, f"Cannot cancel a batch with status '{self._status(job)}'.")

    def render(self, job: VendorJob, request: web.Request) -> dict[str, Any]:
        return self._batch(job)

    async def list(self, request: web.Request) -> web.Response:
        st = self.state
        if not self.authorized(request):
            st.record(MODE, "list", request, 401, auth_valid=False)
            return _error(401, "Incorrect API key provided.")
        try:
            limit = max(1, min(100, int(request.query.get("limit", "20"))))
        except ValueError:
            return _error(400, "limit must be an integer")
        jobs = st.listed(MODE)
        after = request.query.get("after")
        if after is not None:
            ids = [j.job_id for j in jobs]
            jobs = jobs[ids.index(after) + 1 :] if after in ids else []
        page = [self._batch(j) for j in jobs[:limit]]
        st.record(MODE, "list", request, 200)
        return json_response(
            200,
            {
                "object": "list",
                "data": page,
                "first_id": page[0]["id"] if page else None,
                "last_id": page[-1]["id"] if page else None,
                "has_more": len(jobs) > limit,
            },
        )

    async def content(self, request: web.Request) -> web.Response:
        st = self.state
        file = st.files.get(request.match_info["file_id"])
        if not self.authorized(request):
            response = _error(401, "Incorrect API key provided.")
        elif file is None:
            response = _error(404, f"No such File object: {request.match_info['file_id']}")
        else:
            response = web.Response(status=200, body=file[1], content_type=file[0])
        st.record(MODE, "result", request, response.status)
        return response

    # -- the Batch object ---------------------------------------------------

    def _status(self, job: VendorJob) -> str:
        if job.phase == "pending" or (job.phase == "running" and job.faults.outcome == "failed"):
            # a batch fails while its input file is validated, never half-way through
            return "validating"
        if job.phase == "running":
            # the last read before the end shows the finalizing step
            return "finalizing" if job.reads + 1 >= job.faults.duration_polls else "in_progress"
        if job.phase == "succeeded":
            return "completed"
        if job.phase == "cancelled":
            return "cancelled" if job.cancel_requested else "expired"
        return job.phase  # failed, cancelling

    def _batch(self, job: VendorJob) -> dict[str, Any]:
        status, f = self._status(job), job.faults
        body: dict[str, Any] = job.body
        ended = job.ended_ts
        done = job.succeeded_items
        failed = f.failed_items if status == "completed" else 0
        if status == "expired":
            done = min(f.finished_before_expiry, f.items)
            failed = f.items - done
        out = {
            "id": job.job_id,
            "object": "batch",
            "endpoint": body["endpoint"],
            "errors": None,
            "input_file_id": body["input_file_id"],
            "completion_window": body["completion_window"],
            "status": status,
            "output_file_id": None,
            "error_file_id": None,
            "created_at": unix(job.created_ts),
            "in_progress_at": unix(job.created_ts) if job.phase != "pending" else None,
            "expires_at": unix(job.created_ts + _DAY),
            "finalizing_at": unix(ended) if status == "completed" else None,
            "completed_at": unix(ended) if status == "completed" else None,
            "failed_at": unix(ended) if status == "failed" else None,
            "expired_at": unix(ended) if status == "expired" else None,
            "cancelling_at": unix(job.cancelled_ts),
            "cancelled_at": unix(ended) if status == "cancelled" else None,
            "request_counts": {
                "total": 0 if status in ("validating", "failed") else f.items,
                "completed": done,
                "failed": failed,
            },
            "metadata": body.get("metadata"),
        }
        if status == "failed":
            out["errors"] = {
                "object": "list",
                "data": [
                    {
                        "code": "invalid_request",
                        "message": "Line 1: the request body is not valid for the endpoint.",
                        "param": "body",
                        "line": 1,
                    }
                ],
            }
        if job.terminal and status != "failed":
            out["output_file_id"] = self._file(job, "output", range(done), status)
            out["error_file_id"] = self._file(
                job, "error", range(f.items - failed, f.items), status
            )
        return out

    def _file(self, job: VendorJob, kind: str, requests: range, status: str) -> str | None:
        """The JSONL file of these requests' results, made once per job and kind."""
        if not requests:
            return None
        file_id = job.extra.get(kind)
        if file_id is None:
            file_id = job.extra[kind] = self.state.new_id("file-")
            why = "batch_expired" if status == "expired" and kind == "error" else None
            lines = [_line(job, n, ok=kind == "output", expired=why) for n in requests]
            self.state.files[file_id] = ("application/octet-stream", b"".join(lines))
        return str(file_id)


def _line(job: VendorJob, n: int, *, ok: bool, expired: str | None = None) -> bytes:
    custom_id = f"request-{n + 1}"
    if expired is not None:
        message = "This request could not be executed before the completion window expired."
        gone: dict[str, Any] = {
            "id": f"batch_req_{job.job_id}_{n}",
            "custom_id": custom_id,
            "response": None,
            "error": {"code": expired, "message": message},
        }
        return compact_json(gone) + b"\n"
    if ok:
        response_body: dict[str, Any] = {
            "id": f"chatcmpl-{job.job_id}-{n}",
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": f"answer {n + 1}"},
                    "finish_reason": "stop",
                }
            ],
        }
        status = 200
    else:
        response_body = {
            "error": {
                "message": "The model produced invalid content.",
                "type": "invalid_request_error",
                "param": None,
                "code": None,
            }
        }
        status = 400
    line = {
        "id": f"batch_req_{job.job_id}_{n}",
        "custom_id": custom_id,
        "response": {"status_code": status, "request_id": f"req_{n}", "body": response_body},
        "error": None,
    }
    return compact_json(line) + b"\n"


def _invalid(body: Any) -> str | None:
    """Why a create body is refused (400), as the API checks it, or None."""
    if not isinstance(body, dict):
        return "The request body must be a JSON object."
    if not isinstance(body.get("input_file_id"), str):
        return "Missing required parameter: 'input_file_id'."
    if body.get("endpoint") not in _ENDPOINTS:
        return f"Invalid 'endpoint': expected one of {', '.join(_ENDPOINTS)}."
    if body.get("completion_window") != "24h":
        return "Invalid 'completion_window': only '24h' is supported."
    metadata = body.get("metadata")
    if metadata is not None:
        if not isinstance(metadata, dict) or len(metadata) > 16:
            return "Invalid 'metadata': an object of at most 16 pairs."
        for key, value in metadata.items():
            if len(key) > 64 or not isinstance(value, str) or len(value) > 512:
                return "Invalid 'metadata': keys up to 64 and text values up to 512 characters."
    return None
