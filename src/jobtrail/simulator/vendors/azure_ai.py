"""``azure-ai``: an Azure AI service job (Azure AI Language ``analyze-text/jobs``) under
``/azure-ai/language``.

From the Azure AI Language REST reference and the Azure REST API guidelines: a submit
``POST /language/analyze-text/jobs?api-version=...`` answers ``202 Accepted`` with no body and
an ``Operation-Location`` header naming the job; the job's identity is that URL. ``GET`` on
it answers 200 with ``status`` (``notStarted``, ``running``, ``succeeded``,
``partiallyCompleted``, ``failed``, ``cancelling``, ``cancelled``), ``errors[]`` and the
``tasks`` with per-document results and errors. ``POST .../jobs/{jobId}:cancel`` answers 202
with the same ``Operation-Location``. A ``Repeatability-Request-ID`` (+
``Repeatability-First-Sent``) makes a submit repeatable, per the Azure guidelines: the same
id and body again replays the first answer with ``Repeatability-Result: accepted``; the same
id with another body is 409 ``rejected``. Errors are ``{"error": {"code", "message"}}``.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from jobtrail.simulator.answers import json_response
from jobtrail.simulator.faults import FaultError
from jobtrail.simulator.vendors.base import (
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

MODE = "azure-ai"
PREFIX = "/azure-ai/language/analyze-text/jobs"
_CODES = {400: "InvalidRequest", 401: "Unauthorized", 404: "NotFound", 500: "InternalServerError"}


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    body = {"error": {"code": _CODES.get(status, "Conflict"), "message": message}}
    return json_response(status, body, headers)


class AzureAI:
    def __init__(self, state: VendorState) -> None:
        self.state = state
        self.repeatable: dict[str, tuple[str, str]] = {}  # request id -> (body, job id)

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post(PREFIX, self.create)
        app.router.add_get(f"{PREFIX}/{{job_id}}", self.retrieve)
        app.router.add_post(f"{PREFIX}/{{job_id}}:cancel", self.cancel)

    def _auth(self, request: web.Request) -> bool:
        key = request.headers.get("Ocp-Apim-Subscription-Key")
        if key is None and "Authorization" in request.headers:
            key = request.headers["Authorization"].removeprefix("Bearer ")
        return self.state.auth_ok(key)

    def _location(self, request: web.Request, job_id: str) -> dict[str, str]:
        version = request.query.get("api-version", "2023-04-01")
        return {"Operation-Location": f"{base_url(request)}{PREFIX}/{job_id}?api-version={version}"}

    async def create(self, request: web.Request) -> web.StreamResponse:
        st = self.state
        if not self._auth(request):
            st.record(MODE, "create", request, 401, auth_valid=False)
            return _error(401, "Access denied due to invalid subscription key.")
        if "api-version" not in request.query:
            st.record(MODE, "create", request, 400)
            return _error(400, "The api-version query parameter is required.")
        raw = await json_body(request)
        try:
            faults = st.faults_for(MODE, raw)
        except FaultError as exc:
            return _error(400, str(exc))
        body = strip_sim(raw)
        documents = _documents(body)
        if isinstance(documents, str):
            st.record(MODE, "create", request, 400)
            return _error(400, documents)
        repeat_id = request.headers.get("Repeatability-Request-ID")
        canonical = json.dumps(body, sort_keys=True)
        if repeat_id is not None and repeat_id in self.repeatable:
            first_body, job_id = self.repeatable[repeat_id]
            if first_body != canonical:
                st.record(MODE, "create", request, 409)
                return _error(
                    409,
                    "Repeatability-Request-ID was already used with another request.",
                    {"Repeatability-Result": "rejected"},
                )
            st.record(MODE, "create", request, 202, job_id=job_id)
            headers = {**self._location(request, job_id), "Repeatability-Result": "accepted"}
            return web.Response(status=202, headers=headers)
        job = st.add(
            VendorJob(
                job_id=st.new_id("") + "-0000-4000-8000-000000000000",
                mode=MODE,
                faults=faults,
                body=body,
                created_ts=st.clock(),
                tag=body.get("displayName"),
                extra={"documents": documents},
            )
        )
        if repeat_id is not None:
            self.repeatable[repeat_id] = (canonical, job.job_id)
        if st.take_drop(MODE):
            st.record(MODE, "create", request, None, job_id=job.job_id)
            return dropped(request)
        st.record(MODE, "create", request, 202, job_id=job.job_id)
        headers = {**self._location(request, job.job_id), **retry_after(job)}
        if repeat_id is not None:
            headers["Repeatability-Result"] = "accepted"
        return web.Response(status=202, headers=headers)

    async def retrieve(self, request: web.Request) -> web.Response:
        st = self.state
        job_id = request.match_info["job_id"]
        job = st.get(MODE, job_id)
        if not self._auth(request):
            response = _error(401, "Access denied due to invalid subscription key.")
        elif job is None:
            response = _error(404, f"The job {job_id} was not found.")
        else:
            refused = refused_read(job)
            if refused == 404:
                response = _error(404, f"The job {job_id} was not found.")
            elif refused is not None:
                response = _error(500, "Internal server error.")
            else:
                advance(job, st.clock())
                response = json_response(200, self._job(job), retry_after(job))
        st.record(MODE, "status", request, response.status, job_id=job_id)
        return response

    async def cancel(self, request: web.Request) -> web.Response:
        st = self.state
        job_id = request.match_info["job_id"]
        job = st.get(MODE, job_id)
        if not self._auth(request):
            response = _error(401, "Access denied due to invalid subscription key.")
        elif job is None:
            response = _error(404, f"The job {job_id} was not found.")
        elif not request_cancel(job, st.clock()):
            response = _error(400, f"The job {job_id} has already finished.")
        else:
            response = web.Response(status=202, headers=self._location(request, job_id))
        st.record(MODE, "cancel", request, response.status, job_id=job_id)
        return response

    def _status(self, job: VendorJob) -> str:
        if job.phase == "succeeded" and job.faults.failed_items:
            return "partiallyCompleted"
        return {"pending": "notStarted"}.get(job.phase, job.phase)

    def _job(self, job: VendorJob) -> dict[str, Any]:
        status = self._status(job)
        docs: list[str] = job.extra["documents"]
        failed = min(job.faults.failed_items, len(docs)) if job.phase == "succeeded" else 0
        out: dict[str, Any] = {
            "jobId": job.job_id,
            "createdDateTime": rfc3339(job.created_ts),
            "expirationDateTime": rfc3339(job.created_ts + 24 * 3600),
            "lastUpdatedDateTime": rfc3339(job.ended_ts or job.created_ts),
            "status": status,
            "errors": [],
            "tasks": {
                "completed": 1 if job.phase == "succeeded" else 0,
                "failed": 1 if job.phase == "failed" else 0,
                "inProgress": 0 if job.terminal else 1,
                "total": 1,
                "items": [],
            },
        }
        if job.body.get("displayName") is not None:
            out["displayName"] = job.body["displayName"]
        if job.phase == "failed":
            out["errors"] = [
                {"code": "InvalidRequest", "message": "Job task failed: the model is unavailable."}
            ]
        if job.phase == "succeeded":
            good = docs[: len(docs) - failed]
            out["tasks"]["items"] = [
                {
                    "kind": "SentimentAnalysisLROResults",
                    "taskName": "sentiment",
                    "lastUpdateDateTime": rfc3339(job.ended_ts),
                    "status": "succeeded",
                    "results": {
                        "documents": [{"id": d, "sentiment": "positive"} for d in good],
                        "errors": [
                            {
                                "id": d,
                                "error": {
                                    "code": "InvalidDocument",
                                    "message": "Document text is empty.",
                                },
                            }
                            for d in docs[len(good) :]
                        ],
                        "modelVersion": "2022-11-01",
                    },
                }
            ]
        return out


def _documents(body: Any) -> list[str] | str:
    """The submitted documents' ids, or why the body is refused."""
    if not isinstance(body, dict):
        return "The request body must be a JSON object."
    documents = (body.get("analysisInput") or {}).get("documents")
    if not isinstance(documents, list) or not documents:
        return "analysisInput.documents must hold at least one document."
    if not isinstance(body.get("tasks"), list) or not body["tasks"]:
        return "tasks must hold at least one task."
    return [
        str(d.get("id", n + 1)) if isinstance(d, dict) else str(n + 1)
        for n, d in enumerate(documents)
    ]
