"""``anthropic-batch``: Anthropic's Message Batches API under ``/anthropic/v1/messages/batches``.

From Anthropic's API reference: ``POST /v1/messages/batches`` (``x-api-key`` and
``anthropic-version`` headers; ``requests``: ``custom_id`` + ``params``) answers 200 with a
``message_batch`` in ``processing_status: in_progress``. The batch ends ``ended``, whatever
happened to its requests: each request's own outcome (``succeeded``, ``errored``,
``canceled``, ``expired``) is counted in ``request_counts`` and written in the JSON Lines
file at ``results_url``, one line per request with its ``custom_id``. A cancel puts the
batch in ``canceling``; requests already in flight may still finish before it ends. There
is no idempotency key and no metadata: a lost create answer leaves nothing to find the
batch by. Errors are ``{"type": "error", "error": {"type", "message"}}``.
"""

from __future__ import annotations

import re
from typing import Any

from aiohttp import web

from jobtrail.simulator.answers import compact_json, json_response
from jobtrail.simulator.vendors.shared import VendorJob, base_url, rfc3339
from jobtrail.simulator.vendors.skeleton import VendorMode

MODE = "anthropic-batch"
PREFIX = "/anthropic/v1/messages/batches"
_CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_DAY = 24 * 3600
_KINDS = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    500: "api_error",
}


def _error(status: int, message: str) -> web.Response:
    kind = _KINDS.get(status, "api_error")
    return json_response(status, {"type": "error", "error": {"type": kind, "message": message}})


class AnthropicBatch(VendorMode):
    mode = MODE
    id_prefix = "msgbatch_"

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post(PREFIX, self.create)
        app.router.add_get(PREFIX, self.list)
        app.router.add_get(f"{PREFIX}/{{job_id}}", self.retrieve)
        app.router.add_post(f"{PREFIX}/{{job_id}}/cancel", self.cancel)
        app.router.add_get(f"{PREFIX}/{{job_id}}/results", self.results)

    def error(self, status: int, message: str) -> web.Response:
        return _error(status, "Internal server error" if status >= 500 else message)

    async def refused(self, request: web.Request) -> web.Response | None:
        if not self.state.auth_ok(request.headers.get("x-api-key")):
            return _error(401, "invalid x-api-key")
        if not request.headers.get("anthropic-version"):
            return _error(400, "anthropic-version: header is required")
        return None

    def invalid(self, body: Any, request: web.Request) -> str | None:
        found = _custom_ids(body)
        return found if isinstance(found, str) else None

    def made(self, job: VendorJob, request: web.Request) -> None:
        job.extra["custom_ids"] = _custom_ids(job.body)
        # a batch starts processing at once: there is no queued state to show
        job.phase = "running"

    def missing(self, job_id: str) -> str:
        return f"message batch {job_id} not found"

    def too_late(self, job: VendorJob, request: web.Request) -> web.Response:
        return _error(400, f"message batch {job.job_id} has already ended")

    def render(self, job: VendorJob, request: web.Request) -> dict[str, Any]:
        return self._batch(job, request)

    async def results(self, request: web.Request) -> web.Response:
        st = self.state
        job_id = request.match_info["job_id"]
        job = st.get(MODE, job_id)
        response = await self.refused(request)
        if response is None:
            if job is None or not job.terminal:
                response = _error(404, f"no results for message batch {job_id} (not ended)")
            else:
                lines = [compact_json(_result(cid, kind)) + b"\n" for cid, kind in _outcomes(job)]
                response = web.Response(
                    status=200, body=b"".join(lines), content_type="application/binary"
                )
        st.record(MODE, "result", request, response.status, job_id=job_id)
        return response

    async def list(self, request: web.Request) -> web.Response:
        st = self.state
        refusal = await self.refused(request)
        if refusal is not None:
            return refusal
        limit = max(1, min(1000, int(request.query.get("limit", "20") or 20)))
        jobs = st.listed(MODE)
        after = request.query.get("after_id")
        if after is not None:
            ids = [j.job_id for j in jobs]
            jobs = jobs[ids.index(after) + 1 :] if after in ids else []
        page = [self._batch(j, request) for j in jobs[:limit]]
        st.record(MODE, "list", request, 200)
        return json_response(
            200,
            {
                "data": page,
                "has_more": len(jobs) > limit,
                "first_id": page[0]["id"] if page else None,
                "last_id": page[-1]["id"] if page else None,
            },
        )

    def _batch(self, job: VendorJob, request: web.Request) -> dict[str, Any]:
        counts = dict.fromkeys(("processing", "succeeded", "errored", "canceled", "expired"), 0)
        if job.terminal:
            for _, kind in _outcomes(job):
                counts[kind] += 1
        else:
            counts["processing"] = len(job.extra["custom_ids"])
        status = "ended" if job.terminal else "canceling" if job.cancel_requested else "in_progress"
        return {
            "id": job.job_id,
            "type": "message_batch",
            "processing_status": status,
            "request_counts": counts,
            "ended_at": rfc3339(job.ended_ts),
            "created_at": rfc3339(job.created_ts),
            "expires_at": rfc3339(job.created_ts + _DAY),
            "archived_at": None,
            "cancel_initiated_at": rfc3339(job.cancelled_ts),
            "results_url": f"{base_url(request)}{PREFIX}/{job.job_id}/results"
            if job.terminal
            else None,
        }


def _outcomes(job: VendorJob) -> list[tuple[str, str]]:
    """Each request's outcome once the batch ended: (custom_id, result type)."""
    ids: list[str] = job.extra["custom_ids"]
    f = job.faults
    if job.phase == "cancelled" and job.cancel_requested:
        finished = min(f.in_flight_items, len(ids))
        return [(c, "succeeded" if n < finished else "canceled") for n, c in enumerate(ids)]
    if job.phase == "cancelled":
        return [(c, "expired") for c in ids]
    errored = len(ids) if job.phase == "failed" else min(f.failed_items, len(ids))
    return [(c, "succeeded" if n < len(ids) - errored else "errored") for n, c in enumerate(ids)]


def _result(custom_id: str, kind: str) -> dict[str, Any]:
    result: dict[str, Any] = {"type": kind}
    if kind == "succeeded":
        result["message"] = {
            "id": f"msg_{custom_id}",
            "type": "message",
            "role": "assistant",
            "content": [{"type": "text", "text": f"answer for {custom_id}"}],
            "stop_reason": "end_turn",
        }
    elif kind == "errored":
        result["error"] = {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": "max_tokens: too large"},
        }
    return {"custom_id": custom_id, "result": result}


def _custom_ids(body: Any) -> list[str] | str:
    """The requests' custom ids, or why the body is refused."""
    if not isinstance(body, dict) or not isinstance(body.get("requests"), list):
        return "requests: Field required"
    requests = body["requests"]
    if not requests:
        return "requests: List should have at least 1 item"
    ids = []
    for n, item in enumerate(requests):
        if not isinstance(item, dict) or not isinstance(item.get("params"), dict):
            return f"requests.{n}.params: Field required"
        custom_id = item.get("custom_id")
        if not isinstance(custom_id, str) or not _CUSTOM_ID.match(custom_id):
            return f"requests.{n}.custom_id: must match ^[a-zA-Z0-9_-]{{1,64}}$"
        ids.append(custom_id)
    if len(set(ids)) != len(ids):
        return "requests: custom_id values must be unique within a batch"
    return ids
