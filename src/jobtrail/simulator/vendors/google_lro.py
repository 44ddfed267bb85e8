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
from jobtrail.simulator.vendors.shared import VendorJob, VendorState, json_body, rfc3339
from jobtrail.simulator.vendors.skeleton import VendorMode

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
_UNAUTHENTICATED = "Request had invalid authentication credentials."


def _is_uuid4(text: Any) -> bool:
    try:
        value = uuid.UUID(str(text))
    except ValueError:
        return False
    return value.version == 4 and str(value) == str(text).lower()


def _parent(request: web.Request) -> str:
    m = request.match_info
    return f"projects/{m['project']}/locations/{m['location']}"


def _request_id(request: web.Request, body: Any) -> Any:
    """AIP-155's requestId, from the query or the body."""
    return request.query.get("requestId") or (
        body.get("requestId") if isinstance(body, dict) else None
    )


class GoogleLro(VendorMode):
    """AIP-151 operations on the shared skeleton: a duplicate requestId or a taken jobId is
    answered before the skeleton makes a job; the rest is the vendor's words."""

    mode = MODE
    id_prefix = "operation-"

    def __init__(self, state: VendorState) -> None:
        super().__init__(state)
        self.request_ids: dict[str, str] = {}  # requestId -> operation id
        self.resources: dict[str, str] = {}  # job resource name -> operation id

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post(f"{PARENT}/jobs", self.create)
        app.router.add_get(f"{PARENT}/jobs/{{job}}", self.get_job)
        app.router.add_get(f"{PARENT}/operations", self.list)
        app.router.add_get(f"{PARENT}/operations/{{job_id}}", self.retrieve)
        app.router.add_post(f"{PARENT}/operations/{{job_id}}:cancel", self.cancel)

    # -- the vendor's words ---------------------------------------------------------------

    def error(self, status: int, message: str) -> web.Response:
        status_word = _STATUS.get(status, "UNKNOWN")
        return json_response(
            status, {"error": {"code": status, "message": message, "status": status_word}}
        )

    async def refused(self, request: web.Request) -> web.Response | None:
        return None if self.authorized(request) else self.error(401, _UNAUTHENTICATED)

    def invalid(self, body: Any, request: web.Request) -> str | None:
        if not isinstance(body, dict):
            return "Invalid JSON payload: the body must be a Job object."
        request_id = _request_id(request, body)
        if request_id is not None and not _is_uuid4(request_id):
            return "Invalid value for request_id: must be a UUID4."
        return None

    def made(self, job: VendorJob, request: web.Request) -> None:
        request_id = _request_id(request, job.body)
        job.body.pop("requestId", None)
        name = f"{_parent(request)}/jobs/{request.query.get('jobId') or self.state.new_id('job-')}"
        job.tag, job.extra = request_id, {"resource": name}
        self.resources[name] = job.job_id
        if request_id is not None:
            self.request_ids[request_id] = job.job_id

    def render(self, job: VendorJob, request: web.Request) -> dict[str, Any]:
        return self._operation(job, _parent(request))

    def missing(self, job_id: str) -> str:
        return f"Operation '{job_id}' not found."

    def cancelled(self, job: VendorJob, request: web.Request) -> web.Response:
        return json_response(200, {})  # best effort: the operation ends done, code 1

    def too_late(self, job: VendorJob, request: web.Request) -> web.Response:
        return json_response(200, {})  # a cancel of an ended operation changes nothing

    # -- what the skeleton does not do ----------------------------------------------------

    async def create(self, request: web.Request) -> web.StreamResponse:
        """A requestId seen before replays the first answer (AIP-155), a taken jobId is 409;
        anything else is the skeleton's create."""
        if await self.refused(request) is None:
            body = await json_body(request)
            request_id = _request_id(request, body)
            earlier = self.state.get(MODE, self.request_ids.get(str(request_id), ""))
            if request_id is not None and not _is_uuid4(request_id):
                return await super().create(request)  # refused there, as not a UUID4
            if request_id is not None and earlier is not None:
                self.state.record(MODE, "create", request, 200, job_id=earlier.job_id)
                return json_response(200, self._operation(earlier, _parent(request)))
            job = request.query.get("jobId")
            name = f"{_parent(request)}/jobs/{job}"
            if job and isinstance(body, dict) and name in self.resources:
                self.state.record(MODE, "create", request, 409)
                return self.error(409, f"Resource '{name}' already exists.")
        return await super().create(request)

    async def list(self, request: web.Request) -> web.Response:
        refusal = await self.refused(request)
        if refusal is not None:
            return refusal
        parent = _parent(request)
        operations = [self._operation(j, parent) for j in self.listed(request)]
        return json_response(200, {"operations": operations})

    async def get_job(self, request: web.Request) -> web.Response:
        st = self.state
        name = f"{_parent(request)}/jobs/{request.match_info['job']}"
        job = st.get(MODE, self.resources.get(name, ""))
        if not self.authorized(request):
            response = self.error(401, _UNAUTHENTICATED)
        elif job is None or job.phase != "succeeded":
            # the resource exists once its create operation succeeded
            response = self.error(404, f"Resource '{name}' not found.")
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
