"""``google-lro``: a Google Cloud API with AIP-151 long-running operations under ``/google/v1``.

From the AIPs: a create (AIP-133) ``POST /v1/projects/{p}/locations/{l}/jobs?jobId=J``
answers 200 with a ``google.longrunning.Operation`` (``name``, ``metadata`` with
``@type``/``createTime``/``target``/``verb``/``requestedCancellation``, ``done``).
``GET /v1/{name}`` reads the operation; when ``done`` is true it carries exactly one of
``response`` (the resource, with ``@type``) or ``error`` (a ``google.rpc.Status``: ``code``,
``message``, ``details``). ``POST /v1/{name}:cancel`` answers ``{}`` and is best effort: a
cancelled operation ends ``done`` with ``error.code`` 1 (CANCELLED). Duplicates: a
``requestId`` (AIP-155, query or body; it must be a UUID4, anything else is 400
INVALID_ARGUMENT) replays the first answer; a taken ``jobId`` is 409 ALREADY_EXISTS.
Operations are listed at ``/v1/projects/{p}/locations/{l}/operations``.
HTTP errors are ``{"error": {"code", "message", "status"}}``.
"""

from __future__ import annotations

import uuid
from typing import Any

from aiohttp import web

from jobtrail.simulator.answers import json_response
from jobtrail.simulator.faults import FaultError
from jobtrail.simulator.vendors.base import (
    VendorJob,
    VendorState,
    advance,
    dropped,
    json_body,
    refused_read,
    request_cancel,
    retry_after,
    rfc3339,
    strip_sim,
)

MODE = "google-lro"
PARENT = "/google/v1/projects/{project}/locations/{location}"
_TYPE = "type.googleapis.com/jobtrail.sim.v1"
_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    404: "NOT_FOUND",
    409: "ALREADY_EXISTS",
    500: "INTERNAL",
}


def _error(status: int, message: str) -> web.Response:
    body = {"error": {"code": status, "message": message, "status": _STATUS.get(status, "UNKNOWN")}}
    return json_response(status, body)


def _is_uuid4(text: Any) -> bool:
    try:
        value = uuid.UUID(str(text))
    except ValueError:
        return False
    return value.version == 4 and str(value) == str(text).lower()


class GoogleLro:
    def __init__(self, state: VendorState) -> None:
        self.state = state
        self.request_ids: dict[str, str] = {}  # requestId -> operation id
        self.resources: dict[str, str] = {}  # job resource name -> operation id

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post(f"{PARENT}/jobs", self.create)
        app.router.add_get(f"{PARENT}/jobs/{{job}}", self.get_job)
        app.router.add_get(f"{PARENT}/operations", self.list)
        app.router.add_get(f"{PARENT}/operations/{{job_id}}", self.retrieve)
        app.router.add_post(f"{PARENT}/operations/{{job_id}}:cancel", self.cancel)

    def _auth(self, request: web.Request) -> bool:
        header = request.headers.get("Authorization", "")
        return self.state.auth_ok(header.removeprefix("Bearer ") if header else None)

    @staticmethod
    def _parent(request: web.Request) -> str:
        m = request.match_info
        return f"projects/{m['project']}/locations/{m['location']}"

    async def create(self, request: web.Request) -> web.StreamResponse:
        st = self.state
        if not self._auth(request):
            st.record(MODE, "create", request, 401, auth_valid=False)
            return _error(401, "Request had invalid authentication credentials.")
        raw = await json_body(request)
        if not isinstance(raw, dict):
            st.record(MODE, "create", request, 400)
            return _error(400, "Invalid JSON payload: the body must be a Job object.")
        try:
            faults = st.faults_for(MODE, raw)
        except FaultError as exc:
            return _error(400, str(exc))
        body = strip_sim(raw)
        request_id = request.query.get("requestId") or body.pop("requestId", None)
        parent = self._parent(request)
        if request_id is not None and not _is_uuid4(request_id):
            st.record(MODE, "create", request, 400)
            return _error(400, "Invalid value for request_id: must be a UUID4.")
        if request_id is not None and request_id in self.request_ids:
            # AIP-155: the same request again is answered as the first one was
            job = st.get(MODE, self.request_ids[request_id])
            if job is not None:
                st.record(MODE, "create", request, 200, job_id=job.job_id)
                return json_response(200, self._operation(job, parent))
        job_name = f"{parent}/jobs/{request.query.get('jobId') or st.new_id('job-')}"
        if job_name in self.resources:
            st.record(MODE, "create", request, 409)
            return _error(409, f"Resource '{job_name}' already exists.")
        job = st.add(
            VendorJob(
                job_id=st.new_id("operation-"),
                mode=MODE,
                faults=faults,
                body=body,
                created_ts=st.clock(),
                tag=request_id,
                extra={"resource": job_name},
            )
        )
        self.resources[job_name] = job.job_id
        if request_id is not None:
            self.request_ids[request_id] = job.job_id
        if st.take_drop(MODE):
            st.record(MODE, "create", request, None, job_id=job.job_id)
            return dropped(request)
        st.record(MODE, "create", request, 200, job_id=job.job_id)
        return json_response(200, self._operation(job, parent), retry_after(job))

    async def retrieve(self, request: web.Request) -> web.Response:
        st = self.state
        job_id = request.match_info["job_id"]
        job = st.get(MODE, job_id)
        name = f"{self._parent(request)}/operations/{job_id}"
        if not self._auth(request):
            response = _error(401, "Request had invalid authentication credentials.")
        elif job is None:
            response = _error(404, f"Operation '{name}' not found.")
        else:
            refused = refused_read(job)
            if refused == 404:
                response = _error(404, f"Operation '{name}' not found.")
            elif refused is not None:
                response = _error(500, "Internal error encountered.")
            else:
                advance(job, st.clock())
                payload = self._operation(job, self._parent(request))
                response = json_response(200, payload, retry_after(job))
        st.record(MODE, "status", request, response.status, job_id=job_id)
        return response

    async def cancel(self, request: web.Request) -> web.Response:
        st = self.state
        job_id = request.match_info["job_id"]
        job = st.get(MODE, job_id)
        if not self._auth(request):
            response = _error(401, "Request had invalid authentication credentials.")
        elif job is None:
            response = _error(404, f"Operation '{job_id}' not found.")
        else:
            request_cancel(job, st.clock())
            response = json_response(200, {})
        st.record(MODE, "cancel", request, response.status, job_id=job_id)
        return response

    async def list(self, request: web.Request) -> web.Response:
        st = self.state
        if not self._auth(request):
            return _error(401, "Request had invalid authentication credentials.")
        parent = self._parent(request)
        ops = [self._operation(j, parent) for j in st.listed(MODE)]
        st.record(MODE, "list", request, 200)
        return json_response(200, {"operations": ops})

    async def get_job(self, request: web.Request) -> web.Response:
        st = self.state
        name = f"{self._parent(request)}/jobs/{request.match_info['job']}"
        job = st.get(MODE, self.resources.get(name, ""))
        if not self._auth(request):
            response = _error(401, "Request had invalid authentication credentials.")
        elif job is None or job.phase != "succeeded":
            # the resource exists once its create operation succeeded
            response = _error(404, f"Resource '{name}' not found.")
        else:
            response = json_response(200, _resource(job))
        st.record(MODE, "get", request, response.status, job_id=job.job_id if job else None)
        return response

    def _operation(self, job: VendorJob, parent: str) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": f"{parent}/operations/{job.job_id}",
            "metadata": {
                "@type": f"{_TYPE}.OperationMetadata",
                "createTime": rfc3339(job.created_ts),
                "target": job.extra["resource"],
                "verb": "create",
                "requestedCancellation": job.cancel_requested,
                "apiVersion": "v1",
            },
            "done": job.terminal,
        }
        if job.ended_ts is not None:
            out["metadata"]["endTime"] = rfc3339(job.ended_ts)
        if job.phase == "succeeded":
            out["response"] = _resource(job)
        elif job.phase == "failed":
            out["error"] = {
                "code": 9,
                "message": "The job failed: its input was rejected.",
                "details": [
                    {
                        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                        "reason": "INPUT_REJECTED",
                        "domain": "sim.googleapis.com",
                    }
                ],
            }
        elif job.phase == "cancelled" and job.cancel_requested:
            out["error"] = {"code": 1, "message": "Operation was cancelled."}
        elif job.phase == "cancelled":
            out["error"] = {"code": 4, "message": "Operation did not finish in time."}
        return out


def _resource(job: VendorJob) -> dict[str, Any]:
    return {
        "@type": f"{_TYPE}.Job",
        "name": job.extra["resource"],
        "state": "SUCCEEDED",
        "items": [{"id": f"item-{n + 1}", "status": "ok"} for n in range(job.faults.items)],
        "createTime": rfc3339(job.created_ts),
    }
