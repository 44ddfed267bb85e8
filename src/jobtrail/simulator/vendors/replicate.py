"""``replicate``: Replicate's predictions under ``/replicate/v1``.

Written from Replicate's HTTP API reference (replicate.com/docs/reference/http:
``predictions.create``, ``predictions.get``, ``predictions.cancel``), its topics "Prediction
lifecycle" and "Create a prediction" (sync mode), the changelog "Set deadlines for
predictions" (2025-10-16) and "Webhooks" (signature verification): ``POST /v1/predictions``
with ``version`` and ``input`` answers 201 with a prediction in ``starting``; it goes
``processing`` and ends ``succeeded`` (its ``output``), ``failed`` (``error``) or
``canceled``. A ``Cancel-After`` header (a duration such as ``1m`` or ``90s``) is the
prediction's deadline: reached before it starts running it ends ``aborted`` (not billed),
reached while it runs it ends ``canceled`` (billed for what ran, its output so far kept).
``Prefer: wait`` (or ``wait=n``, 1 to 60 seconds) holds the create answer until the
prediction ends or the wait runs out; here a prediction that ends at its first step answers
finished, any other answers ``starting``. ``POST /v1/predictions/{id}/cancel`` answers the
prediction, ``canceled``. ``metrics`` holds ``predict_time`` (seconds billed) and, for
language models, ``input_token_count`` and ``output_token_count``. A create body's
``webhook`` URL receives the prediction itself when it ends, signed the Standard Webhooks
way (``webhook-id``, ``webhook-timestamp``, ``webhook-signature``). There is no idempotency
key, and the listing (``GET /v1/predictions``) cannot be filtered by anything of ours.
"""

from __future__ import annotations

import re
from typing import Any

from aiohttp import web

from jobtrail.simulator.answers import json_response
from jobtrail.simulator.vendors.shared import VendorJob, base_url, rfc3339
from jobtrail.simulator.vendors.skeleton import VendorMode

MODE = "replicate"
PREFIX = "/replicate/v1/predictions"
_DURATION = re.compile(r"^(\d+(\.\d+)?(ms|s|m|h))+$")
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_WAIT = re.compile(r"^wait(=([1-9]|[1-5][0-9]|60))?$")
_STATUS = {
    "pending": "starting",
    "running": "processing",
    "cancelling": "processing",
    "succeeded": "succeeded",
    "failed": "failed",
}


def cancel_after(text: str) -> float | None:
    """Seconds of a `Cancel-After` duration (`1h30m`, `90s`), or None if unreadable."""
    if not _DURATION.fullmatch(text.strip()):
        return None
    return sum(float(n) * _UNIT[unit] for n, unit in _PART.findall(text))


class Replicate(VendorMode):
    mode = MODE
    create_status = 201

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post(PREFIX, self.create)
        app.router.add_get(f"{PREFIX}/{{job_id}}", self.retrieve)
        app.router.add_post(f"{PREFIX}/{{job_id}}/cancel", self.cancel)

    def error(self, status: int, message: str) -> web.Response:
        # Replicate answers problems as RFC 7807 documents
        return json_response(status, {"title": _TITLES.get(status, "Error"), "detail": message})

    def missing(self, job_id: str) -> str:
        return f"Prediction {job_id} not found"

    def invalid(self, body: Any, request: web.Request) -> str | None:
        if not isinstance(body, dict):
            return "The request body must be a JSON object"
        if not isinstance(body.get("version"), str) or not isinstance(body.get("input"), dict):
            return "version and input are required"
        deadline = request.headers.get("Cancel-After")
        if deadline is not None and not (cancel_after(deadline) or 0) > 0:
            return f"Cancel-After: {deadline!r} is not a duration such as 1m or 90s"
        wait = request.headers.get("Prefer")
        if wait is not None and not _WAIT.fullmatch(wait):
            return "Prefer: wait, or wait=n with n from 1 to 60"
        return None

    def made(self, job: VendorJob, request: web.Request) -> None:
        deadline = request.headers.get("Cancel-After")
        if deadline is not None:
            job.deadline_ts = job.created_ts + (cancel_after(deadline) or 0)
            job.extra["cancel_after"] = deadline
        if request.headers.get("Prefer") and job.faults.duration_polls <= 1:
            job.phase, job.ended_ts = job.faults.outcome, job.created_ts  # done within the wait
            job.reads = 1
        job.extra["base"] = base_url(request)

    def cancelled(self, job: VendorJob, request: web.Request) -> web.Response:
        job.phase, job.ended_ts = "cancelled", self.state.clock()
        return json_response(200, self.render(job, request))

    def too_late(self, job: VendorJob, request: web.Request) -> web.Response:
        return json_response(200, self.render(job, request))  # canceling an ended one: as is

    def _status(self, job: VendorJob) -> str:
        if job.phase == "cancelled":
            # a deadline reached before the prediction started running aborts it
            return "aborted" if job.timed_out and job.reads == 0 else "canceled"
        return _STATUS[job.phase]

    def render(self, job: VendorJob, request: web.Request | None) -> dict[str, Any]:
        status, body = self._status(job), job.body
        urls = f"{job.extra['base']}{PREFIX}/{job.job_id}"
        ran = job.reads > 0 and status != "aborted"
        out: dict[str, Any] = {
            "id": job.job_id,
            "model": body["version"].split(":")[0],
            "version": body["version"],
            "input": body["input"],
            "logs": "",
            "output": None,
            "data_removed": False,
            "error": None,
            "status": status,
            "created_at": rfc3339(job.created_ts),
            "started_at": rfc3339(job.created_ts) if ran else None,
            "completed_at": rfc3339(job.ended_ts),
            "urls": {"get": urls, "cancel": f"{urls}/cancel"},
            "metrics": {},
        }
        if status == "succeeded":
            out["output"] = ["The ", "whole ", "answer."]
            out["metrics"] = {"predict_time": 4.2, "input_token_count": 12, "output_token_count": 3}
        elif status == "canceled":
            out["output"] = ["The "] if ran else None  # what it produced before it stopped
            out["metrics"] = {"predict_time": 1.5 if ran else 0, "output_token_count": 1}
        elif status == "failed":
            out["error"] = "CUDA out of memory"
            out["metrics"] = {"predict_time": 0.8}
        if "cancel_after" in job.extra:
            out["deadline"] = rfc3339(job.deadline_ts)
        return out

    def event(self, job: VendorJob) -> tuple[str, dict[str, Any]] | None:
        if not job.terminal:
            return None
        return f"msg_{job.job_id}_{self._status(job)}", self.render(job, None)


_TITLES = {400: "Bad Request", 401: "Unauthenticated", 404: "Not found", 500: "Server error"}
