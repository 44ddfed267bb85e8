"""``azure-arm``: Azure Resource Manager long-running operations under ``/azure-arm``.

From "Track asynchronous Azure operations" and the ARM RPC: a PUT, PATCH, DELETE or POST
action answers 200/201 (body with ``properties.provisioningState``), 202 (usually no body)
or 204 (nothing to do). An operation still running carries ``Azure-AsyncOperation`` (a
status monitor: always 200, ``status`` ``InProgress`` until ``Succeeded``, ``Failed`` or
``Canceled``, with ``error`` on failure) and/or ``Location`` (202 while running; then 200
with the result, 204 for a DELETE, or the error's own status code), and ``Retry-After``.
Without those headers, the provisioning state in the body is the answer: Succeeded,
Failed and Canceled are terminal; any other word means "still running, GET the resource".
PUT and DELETE on the client-chosen resource URL are idempotent. A running resource can be
cancelled with ``POST {resource}/cancel`` (as ARM deployments are: 204). Errors are
``{"error": {"code", "message"}}``. Faults ``create_status``, ``headers`` and ``create_state``
(``none``: a resource without ``provisioningState``) choose the answer shape, ``outcome``
the terminal state.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from jobtrail.simulator.answers import json_response
from jobtrail.simulator.faults import FaultError
from jobtrail.simulator.vendors.shared import (
    VendorJob,
    VendorState,
    advance,
    base_url,
    dropped,
    json_body,
    refused_read,
    request_cancel,
    retry_after,
    rfc3339,
    strip_sim,
)

MODE = "azure-arm"
RESOURCE = (
    "/azure-arm/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Sim/widgets/{name}"
)
OPERATIONS = "/azure-arm/subscriptions/{sub}/providers/Microsoft.Sim/locations/westus"
_TERMINAL_WORD = {"succeeded": "Succeeded", "failed": "Failed", "cancelled": "Canceled"}
_RUNNING_WORD = {"PUT": "Creating", "PATCH": "Updating", "DELETE": "Deleting", "POST": "Running"}


def _error(status: int, code: str, message: str) -> web.Response:
    return json_response(status, {"error": {"code": code, "message": message}})


@dataclass(kw_only=True, slots=True, eq=False)
class Widget:
    """One resource: its last accepted body and the operation that last changed it."""

    path: str
    body: dict[str, Any]
    job: VendorJob | None = None
    exists: bool = False  # a first PUT that has not succeeded yet leaves no resource behind
    answers: dict[str, Any] = field(default_factory=dict)


class AzureArm:
    def __init__(self, state: VendorState) -> None:
        self.state = state
        self.widgets: dict[str, Widget] = {}

    def add_routes(self, app: web.Application) -> None:
        for method in ("PUT", "PATCH", "DELETE"):
            app.router.add_route(method, RESOURCE, self.change)
        app.router.add_get(RESOURCE, self.get)
        app.router.add_post(f"{RESOURCE}/export", self.change)
        app.router.add_post(f"{RESOURCE}/cancel", self.cancel)
        app.router.add_get(f"{OPERATIONS}/operationStatuses/{{job_id}}", self.monitor)
        app.router.add_get(f"{OPERATIONS}/operationResults/{{job_id}}", self.location)

    def _auth(self, request: web.Request) -> bool:
        header = request.headers.get("Authorization", "")
        return self.state.auth_ok(header.removeprefix("Bearer ") if header else None)

    # C901: ARM's answers by method and fault, as lros.js shapes them
    async def change(self, request: web.Request) -> web.StreamResponse:  # noqa: C901
        """PUT, PATCH, DELETE of a widget, or the POST action ``export``."""
        st, method = self.state, request.method
        if not self._auth(request):
            st.record(MODE, "create", request, 401, auth_valid=False)
            return _error(401, "AuthenticationFailed", "The access token is invalid.")
        if "api-version" not in request.query:
            st.record(MODE, "create", request, 400)
            return _error(400, "MissingApiVersionParameter", "The api-version is required.")
        raw = await json_body(request) if method in ("PUT", "PATCH", "POST") else None
        try:
            faults = st.faults_for(MODE, raw)
        except FaultError as exc:
            return _error(400, "InvalidSimFault", str(exc))
        body = strip_sim(raw)
        path = request.path.removesuffix("/export")
        widget = self.widgets.get(path)
        if method == "PUT" and not isinstance(body, dict):
            st.record(MODE, "create", request, 400)
            return _error(400, "InvalidRequestContent", "The request content is not valid JSON.")
        if method in ("PATCH", "POST") and (widget is None or not widget.exists):
            st.record(MODE, "create", request, 404)
            return _error(404, "ResourceNotFound", f"The resource '{path}' was not found.")
        gone = widget is None or (not widget.exists and (widget.job is None or widget.job.terminal))
        if method == "DELETE" and gone:
            st.record(MODE, "create", request, 204)
            return web.Response(status=204)
        verb = "POST" if request.path.endswith("/export") else method
        canonical = json.dumps([verb, body], sort_keys=True)
        if widget is not None and widget.job is not None and not widget.job.terminal:
            if canonical in widget.answers:
                # the same request while it runs: the same operation, not a new one
                status, headers, payload = widget.answers[canonical]
                st.record(MODE, "create", request, status, job_id=widget.job.job_id)
                return _answer(status, headers, payload)
            st.record(MODE, "create", request, 409)
            return _error(409, "AnotherOperationInProgress", "An operation is in progress.")
        if widget is None:
            widget = self.widgets[path] = Widget(path=path, body=body)
        job = st.add(
            VendorJob(
                job_id=st.new_id("op-"),
                mode=MODE,
                faults=faults,
                body=body,
                created_ts=st.clock(),
                tag=path,
                extra={"verb": verb, "path": path},
            )
        )
        if verb in ("PUT", "PATCH"):
            base = widget.body if verb == "PATCH" else {}
            widget.body = {**base, **(body or {})}
        widget.job, widget.answers = job, {}
        status, headers, payload = self._create_answer(request, widget, job)
        widget.answers[canonical] = (status, headers, payload)
        if st.take_drop(MODE):
            st.record(MODE, "create", request, None, job_id=job.job_id)
            return dropped(request)
        st.record(MODE, "create", request, status, job_id=job.job_id)
        return _answer(status, headers, payload)

    def _create_answer(
        self, request: web.Request, widget: Widget, job: VendorJob
    ) -> tuple[int, dict[str, str], Any]:
        verb, f = job.extra["verb"], job.faults
        default = {"PUT": 200 if widget.exists else 201, "DELETE": 202, "PATCH": 202, "POST": 202}
        status = f.create_status or default[verb]
        ops = f"{base_url(request)}{OPERATIONS.format(sub=request.match_info['sub'])}"
        version = request.query["api-version"]
        headers: dict[str, str] = {}
        if f.headers in ("azure-async-operation", "both"):
            headers["Azure-AsyncOperation"] = (
                f"{ops}/operationStatuses/{job.job_id}?api-version={version}"
            )
        if f.headers in ("location", "both"):
            headers["Location"] = f"{ops}/operationResults/{job.job_id}?api-version={version}"
        stateless_201 = status == 201 and f.create_state == "none"  # read at the resource
        if status == 204 or (not headers and status in (200, 201) and not stateless_201):
            # no way to follow it: the answer itself is the end
            job.phase, job.ended_ts = f.outcome, job.created_ts
            self._settle(widget, job)
        if headers:
            headers.update(retry_after(job) or {"Retry-After": "0"})
        payload = None
        if status in (200, 201) and verb != "DELETE":
            payload = self._resource(widget) if verb != "POST" else _export(job)
            if f.create_state == "none":
                payload.get("properties", {}).pop("provisioningState", None)
        return status, headers, payload

    async def get(self, request: web.Request) -> web.Response:
        st = self.state
        widget = self.widgets.get(request.path)
        job = widget.job if widget else None
        response: web.Response | None = None
        if not self._auth(request):
            response = _error(401, "AuthenticationFailed", "The access token is invalid.")
        elif widget is not None and job is not None and not job.terminal:
            refused = refused_read(job)
            if refused is not None:
                response = _refused(refused, request.path)
            else:
                self._step(widget, job)
        if response is None:
            if widget is None or not (widget.exists or (job and not job.terminal)):
                response = _error(404, "ResourceNotFound", f"'{request.path}' was not found.")
            else:
                response = json_response(
                    200, self._resource(widget), retry_after(job) if job else {}
                )
        st.record(MODE, "get", request, response.status, job_id=job.job_id if job else None)
        return response

    async def cancel(self, request: web.Request) -> web.Response:
        st = self.state
        widget = self.widgets.get(request.path.removesuffix("/cancel"))
        job = widget.job if widget else None
        if not self._auth(request):
            response = _error(401, "AuthenticationFailed", "The access token is invalid.")
        elif widget is None or job is None or not request_cancel(job, st.clock()):
            response = _error(409, "CannotCancel", "No running operation to cancel.")
        else:
            self._settle(widget, job)
            response = web.Response(status=204)
        st.record(MODE, "cancel", request, response.status, job_id=job.job_id if job else None)
        return response

    async def monitor(self, request: web.Request) -> web.Response:
        """The Azure-AsyncOperation status monitor: always 200 once it answers."""
        job, widget, response = self._read(request)
        if response is None and job is not None and widget is not None:
            body: dict[str, Any] = {
                "id": request.path,
                "name": job.job_id,
                "resourceId": widget.path.removeprefix("/azure-arm"),
                "status": _TERMINAL_WORD.get(job.phase, "InProgress"),
                "startTime": rfc3339(job.created_ts),
                "percentComplete": 100.0 if job.terminal else 50.0,
            }
            if job.terminal:
                body["endTime"] = rfc3339(job.ended_ts)
            if job.phase in ("failed", "cancelled"):
                body["error"] = _op_error(job)
            if job.phase == "succeeded" and job.extra["verb"] == "POST":
                body["properties"] = _export(job)
            response = json_response(200, body, retry_after(job))
        return self._recorded(request, job, response)

    async def location(self, request: web.Request) -> web.Response:
        """The Location URL: 202 while running, then the result, 204, or the error."""
        job, widget, response = self._read(request)
        if response is None and job is not None and widget is not None:
            verb = job.extra["verb"]
            if not job.terminal:
                headers = {
                    "Location": str(request.url),
                    **(retry_after(job) or {"Retry-After": "0"}),
                }
                response = web.Response(status=202, headers=headers)
            elif job.phase != "succeeded":
                response = json_response(400, {"error": _op_error(job)})
            elif verb == "DELETE":
                response = web.Response(status=204)
            elif verb == "POST":
                response = json_response(200, _export(job))
            else:
                response = json_response(200, self._resource(widget))
        return self._recorded(request, job, response)

    def _read(
        self, request: web.Request
    ) -> tuple[VendorJob | None, Widget | None, web.Response | None]:
        if not self._auth(request):
            return None, None, _error(401, "AuthenticationFailed", "The access token is invalid.")
        job = self.state.get(MODE, request.match_info["job_id"])
        if job is None:
            return None, None, _refused(404, request.path)
        widget = self.widgets[job.extra["path"]]
        refused = refused_read(job)
        if refused is not None:
            return job, widget, _refused(refused, request.path)
        self._step(widget, job)
        return job, widget, None

    def _recorded(
        self, request: web.Request, job: VendorJob | None, response: web.Response | None
    ) -> web.Response:
        assert response is not None
        self.state.record(
            MODE, "status", request, response.status, job_id=job.job_id if job else None
        )
        return response

    def _step(self, widget: Widget, job: VendorJob) -> None:
        if widget.job is job:
            advance(job, self.state.clock())
            self._settle(widget, job)

    @staticmethod
    def _settle(widget: Widget, job: VendorJob) -> None:
        if job.phase == "succeeded":
            widget.exists = job.extra["verb"] != "DELETE"

    def _resource(self, widget: Widget) -> dict[str, Any]:
        job = widget.job
        state = "Succeeded"
        if job is not None:
            word = _TERMINAL_WORD.get(job.phase)
            state = word or (
                "Accepted" if job.phase == "pending" else _RUNNING_WORD[job.extra["verb"]]
            )
        name = widget.path.rsplit("/", 1)[-1]
        properties = dict(widget.body.get("properties") or {})
        properties["provisioningState"] = state
        return {
            "id": widget.path.removeprefix("/azure-arm"),
            "name": name,
            "type": "Microsoft.Sim/widgets",
            "location": widget.body.get("location", "westus"),
            "properties": properties,
        }


def _answer(status: int, headers: dict[str, str], payload: Any) -> web.Response:
    if payload is None:
        return web.Response(status=status, headers=headers)
    return json_response(status, payload, headers)


def _refused(status: int, path: str) -> web.Response:
    if status == 404:
        return _error(404, "NotFound", f"'{path}' was not found.")
    return _error(500, "InternalServerError", "An internal error occurred; try again.")


def _op_error(job: VendorJob) -> dict[str, str]:
    if job.phase == "cancelled":
        return {"code": "OperationCanceled", "message": "The operation was canceled."}
    return {"code": "ProvisioningFailed", "message": "The widget could not be provisioned."}


def _export(job: VendorJob) -> dict[str, Any]:
    return {
        "exportUri": f"https://sim.blob.example/exports/{job.job_id}",
        "items": job.faults.items,
    }
