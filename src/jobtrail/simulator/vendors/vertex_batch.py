"""``vertex-batch``: Vertex AI batch prediction jobs under ``/vertex/v1``.

Written from the Vertex AI REST reference (``projects.locations.batchPredictionJobs``:
``create``, ``get``, ``list``, ``cancel``; the ``BatchPredictionJob`` resource, ``JobState``
and ``CompletionStats``; google.rpc ``Status`` for errors) and Google's AIP-160 filtering:
``POST .../locations/{l}/batchPredictionJobs`` with ``displayName``, ``model``,
``inputConfig``, ``outputConfig`` and ``labels`` answers the job itself (not an Operation),
named ``projects/{p}/locations/{l}/batchPredictionJobs/{id}``, in ``JOB_STATE_PENDING``. It
runs (``JOB_STATE_RUNNING``) and ends ``JOB_STATE_SUCCEEDED`` (``outputInfo`` names where
the predictions were written, ``completionStats`` counts them), ``JOB_STATE_FAILED`` (its
``error``, a google.rpc.Status) or, after ``POST .../{id}:cancel`` (answered ``{}``, best
effort), ``JOB_STATE_CANCELLING`` then ``JOB_STATE_CANCELLED``, keeping the predictions made
before it stopped. Counts are int64 written as JSON strings (proto3 JSON). ``GET
.../batchPredictionJobs`` lists jobs newest first and takes ``filter`` (``labels.KEY="VALUE"``
here), ``pageSize`` and ``pageToken``. Label values are lowercase letters, digits, ``_`` and
``-``, 63 characters at most. There is no request id for this create.
"""

from __future__ import annotations

import re
from typing import Any

from aiohttp import web

from jobtrail.simulator.answers import json_response
from jobtrail.simulator.vendors.shared import VendorJob, rfc3339
from jobtrail.simulator.vendors.skeleton import VendorMode

MODE = "vertex-batch"
PREFIX = "/vertex/v1/projects/{project}/locations/{location}/batchPredictionJobs"
_LABEL = re.compile(r"^[a-z0-9_-]{0,63}$")
_FILTER = re.compile(r'^labels\.([a-z0-9_-]{1,63})\s*=\s*"?([a-z0-9_-]{0,63})"?$')
_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 404: "NOT_FOUND", 500: "INTERNAL"}
_STATE = {
    "pending": "JOB_STATE_PENDING",
    "running": "JOB_STATE_RUNNING",
    "cancelling": "JOB_STATE_CANCELLING",
    "succeeded": "JOB_STATE_SUCCEEDED",
    "failed": "JOB_STATE_FAILED",
    "cancelled": "JOB_STATE_CANCELLED",
}


class VertexBatch(VendorMode):
    mode = MODE

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post(PREFIX, self.create)
        app.router.add_get(PREFIX, self.list)
        app.router.add_get(f"{PREFIX}/{{job_id}}", self.retrieve)
        app.router.add_post(f"{PREFIX}/{{job_id}}:cancel", self.cancel)

    def error(self, status: int, message: str) -> web.Response:
        body = {"error": {"code": status, "message": message, "status": _STATUS.get(status)}}
        return json_response(status, body)

    def missing(self, job_id: str) -> str:
        return f"The BatchPredictionJob does not exist: {job_id}"

    def invalid(self, body: Any, request: web.Request) -> str | None:
        if not isinstance(body, dict):
            return "Invalid JSON payload received."
        for key in ("displayName", "model", "inputConfig", "outputConfig"):
            if key not in body:
                return f"Required field is not set: {key}"
        labels = body.get("labels") or {}
        if not isinstance(labels, dict) or len(labels) > 64:
            return "labels: at most 64 labels, as a map of text"
        for key, value in labels.items():
            if not _LABEL.fullmatch(str(key)) or not key or not isinstance(value, str):
                return f"labels: invalid label key {key!r}"
            if not _LABEL.fullmatch(value):
                return (
                    f"labels.{key}: a label value holds lowercase letters, digits, _ and - "
                    "only, 63 characters at most"
                )
        return None

    def made(self, job: VendorJob, request: web.Request) -> None:
        info = request.match_info
        job.job_id = str(abs(hash(job.job_id)) % 10**18)  # Vertex ids are numbers
        job.extra["parent"] = f"projects/{info['project']}/locations/{info['location']}"
        job.tag = str((job.body.get("labels") or {}).get("jobtrail_ref"))

    def cancelled(self, job: VendorJob, request: web.Request) -> web.Response:
        return json_response(200, {})

    def too_late(self, job: VendorJob, request: web.Request) -> web.Response:
        return json_response(200, {})  # best effort: cancelling an ended job is no error

    async def list(self, request: web.Request) -> web.Response:
        refusal = await self.refused(request)
        if refusal is not None:
            return refusal
        wanted: tuple[str, str] | None = None
        text = request.query.get("filter", "").strip()
        if text:
            matched = _FILTER.fullmatch(text)
            if matched is None:
                return self.error(400, f"Unsupported filter: {text}")
            wanted = (matched.group(1), matched.group(2))
        parent = (
            f"projects/{request.match_info['project']}/locations/{request.match_info['location']}"
        )

        def keep(job: VendorJob) -> bool:
            labels = job.body.get("labels") or {}
            ours = job.extra["parent"] == parent
            return ours and (wanted is None or labels.get(wanted[0]) == wanted[1])

        jobs = self.listed(request, keep)
        size = max(1, min(1000, int(request.query.get("pageSize", "100") or 100)))
        start = int(request.query.get("pageToken", "0") or 0)
        out: dict[str, Any] = {
            "batchPredictionJobs": [self.render(j, request) for j in jobs[start : start + size]]
        }
        if start + size < len(jobs):
            out["nextPageToken"] = str(start + size)
        return json_response(200, out)

    def render(self, job: VendorJob, request: web.Request) -> dict[str, Any]:
        state, f, body = _STATE[job.phase], job.faults, job.body
        name = f"{job.extra['parent']}/batchPredictionJobs/{job.job_id}"
        out: dict[str, Any] = {
            "name": name,
            "displayName": body["displayName"],
            "model": body["model"],
            "inputConfig": body["inputConfig"],
            "outputConfig": body["outputConfig"],
            "state": state,
            "createTime": rfc3339(job.created_ts),
            "updateTime": rfc3339(job.ended_ts or job.created_ts),
            "labels": body.get("labels") or {},
        }
        if job.phase != "pending":
            out["startTime"] = rfc3339(job.created_ts)
        if job.terminal:
            out["endTime"] = rfc3339(job.ended_ts)
        done = {"succeeded": f.items - f.failed_items, "cancelled": f.in_flight_items}
        made = min(done.get(job.phase, 0), f.items)
        if job.phase in ("succeeded", "cancelled"):
            prefix = (
                body["outputConfig"].get("gcsDestination", {}).get("outputUriPrefix", "gs://out")
            )
            out["outputInfo"] = {"gcsOutputDirectory": f"{prefix}/prediction-{job.job_id}"}
            failed = f.failed_items if job.phase == "succeeded" else 0
            out["completionStats"] = {
                "successfulCount": str(made),
                "failedCount": str(failed),
                "incompleteCount": str(f.items - made - failed),
            }
        if job.phase == "failed":
            out["error"] = {"code": 3, "message": "Invalid instances in the input."}
        elif job.phase == "cancelled":
            out["error"] = {"code": 1, "message": "CANCELED"}
        return out
