"""``openai-responses``: OpenAI's Responses API in background mode under ``/openai/v1``.

Written from OpenAI's API reference ("Responses": create, retrieve, cancel) and its guide
"Background mode" (developers.openai.com/docs/guides/background): ``POST /v1/responses``
with ``background: true`` answers 200 with a Response in ``queued``; polled with ``GET
/v1/responses/{id}`` it goes ``in_progress`` and ends ``completed`` (its ``output`` items and
``usage``: ``input_tokens``, ``output_tokens``, ``total_tokens``), ``failed`` (``error``:
``code``, ``message``) or ``incomplete`` (``incomplete_details.reason``). ``POST
/v1/responses/{id}/cancel`` cancels a background response: it answers the Response, now
``cancelled`` (cancelling again is harmless); a response that already ended stays as it
ended. A create without ``background: true`` is answered in the foreground, not modelled
here (refused). There is no idempotency key and no listing of responses: after a lost
create answer nothing can find the response. OpenAI's webhooks (``response.completed``,
``response.failed``, ``response.cancelled``, ``response.incomplete``) are signed the
Standard Webhooks way and carry ``data.id``; an event body is
``{"id": "evt_...", "object": "event", "type": ..., "created_at", "data": {"id"}}``.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from jobtrail.simulator.answers import json_response
from jobtrail.simulator.vendors.shared import VendorJob, unix
from jobtrail.simulator.vendors.skeleton import VendorMode

MODE = "openai-responses"
PREFIX = "/openai/v1/responses"
_STATUS = {
    "pending": "queued",
    "running": "in_progress",
    "cancelling": "in_progress",
    "succeeded": "completed",
    "failed": "failed",
    "cancelled": "cancelled",
}


class OpenAIResponses(VendorMode):
    mode = MODE
    id_prefix = "resp_"

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post(PREFIX, self.create)
        app.router.add_get(f"{PREFIX}/{{job_id}}", self.retrieve)
        app.router.add_post(f"{PREFIX}/{{job_id}}/cancel", self.cancel)

    def error(self, status: int, message: str) -> web.Response:
        kind = "invalid_request_error" if status < 500 else "server_error"
        body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
        return json_response(status, body)

    def missing(self, job_id: str) -> str:
        return f"Response with id '{job_id}' not found."

    def invalid(self, body: Any, request: web.Request) -> str | None:
        if not isinstance(body, dict):
            return "The request body must be a JSON object."
        if not isinstance(body.get("model"), str):
            return "Missing required parameter: 'model'."
        if body.get("background") is not True:
            return "This simulator models background responses only: set 'background': true."
        if body.get("store") is False:
            return "Background responses need 'store': true (or store left out)."
        return None

    def cancelled(self, job: VendorJob, request: web.Request) -> web.Response:
        # a background response is cancelled at once: the answer is the cancelled response
        job.phase, job.ended_ts = "cancelled", self.state.clock()
        return json_response(200, self.render(job, request))

    def too_late(self, job: VendorJob, request: web.Request) -> web.Response:
        if job.phase == "cancelled":  # cancelling again is harmless
            return json_response(200, self.render(job, request))
        return self.error(400, f"Cannot cancel a response with status '{self._status(job)}'.")

    def _status(self, job: VendorJob) -> str:
        if job.phase == "cancelled" and not job.cancel_requested:
            return "incomplete"  # ended by the provider itself: cut short
        return _STATUS[job.phase]

    def render(self, job: VendorJob, request: web.Request) -> dict[str, Any]:
        status = self._status(job)
        body: dict[str, Any] = job.body
        out: dict[str, Any] = {
            "id": job.job_id,
            "object": "response",
            "created_at": unix(job.created_ts),
            "status": status,
            "background": True,
            "error": None,
            "incomplete_details": None,
            "model": body["model"],
            "output": [],
            "usage": None,
            "metadata": body.get("metadata") or {},
        }
        if status == "completed":
            out["output"] = [_message(job, "The answer, in full.")]
            out["usage"] = _usage(120, 480)
        elif status == "incomplete":
            out["incomplete_details"] = {"reason": "max_output_tokens"}
            out["output"] = [_message(job, "The answer, cut")]
            out["usage"] = _usage(120, 64)
        elif status == "failed":
            out["error"] = {"code": "server_error", "message": "The model failed to respond."}
            out["usage"] = _usage(120, 0)
        elif status == "cancelled":
            out["usage"] = _usage(120, 0)
        return out

    def event(self, job: VendorJob) -> tuple[str, dict[str, Any]] | None:
        status = self._status(job)
        if status not in ("completed", "failed", "cancelled", "incomplete"):
            return None
        event_id = f"evt_{job.job_id}_{status}"
        document = {
            "id": event_id,
            "object": "event",
            "type": f"response.{status}",
            "created_at": unix(job.ended_ts),
            "data": {"id": job.job_id},
        }
        return event_id, document


def _message(job: VendorJob, text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"msg_{job.job_id}",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _usage(prompt: int, completion: int) -> dict[str, int]:
    return {
        "input_tokens": prompt,
        "output_tokens": completion,
        "total_tokens": prompt + completion,
    }
