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
from jobtrail.simulator.vendors.shared import (
    VendorJob,
    VendorState,
    base_url,
    json_body,
    retry_after,
    rfc3339,
    strip_sim,
)
from jobtrail.simulator.vendors.skeleton import VendorMode

MODE = "azure-ai"
PREFIX = "/azure-ai/language/analyze-text/jobs"
_CODES = {400: "InvalidRequest", 401: "Unauthorized", 404: "NotFound", 500: "InternalServerError"}
_REPEAT = "Repeatability-Request-ID"


class AzureAI(VendorMode):
    """An Azure AI Language job on the shared skeleton: a repeated Repeatability-Request-ID
    is answered before the skeleton makes a job; the rest is the vendor's words."""

    mode = MODE
    create_status = 202

    def __init__(self, state: VendorState) -> None:
        super().__init__(state)
        self.repeatable: dict[str, tuple[str, str]] = {}  # request id -> (body, job id)

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post(PREFIX, self.create)
        app.router.add_get(f"{PREFIX}/{{job_id}}", self.retrieve)
        app.router.add_post(f"{PREFIX}/{{job_id}}:cancel", self.cancel)

    # -- the vendor's words ---------------------------------------------------------------

    def authorized(self, request: web.Request) -> bool:
        key = request.headers.get("Ocp-Apim-Subscription-Key")
        if key is None and "Authorization" in request.headers:
            key = request.headers["Authorization"].removeprefix("Bearer ")
        return self.state.auth_ok(key)

    def error(
        self, status: int, message: str, headers: dict[str, str] | None = None
    ) -> web.Response:
        body = {"error": {"code": _CODES.get(status, "Conflict"), "message": message}}
        return json_response(status, body, headers)

    async def refused(self, request: web.Request) -> web.Response | None:
        if self.authorized(request):
            return None
        return self.error(401, "Access denied due to invalid subscription key.")

    def invalid(self, body: Any, request: web.Request) -> str | None:
        if "api-version" not in request.query:
            return "The api-version query parameter is required."
        documents = _documents(body)
        return documents if isinstance(documents, str) else None

    def made(self, job: VendorJob, request: web.Request) -> None:
        job.job_id = self.state.new_id("") + "-0000-4000-8000-000000000000"
        docs = _documents(job.body)
        job.tag, job.extra = job.body.get("displayName"), {"documents": docs}
        repeat_id = request.headers.get(_REPEAT)
        if repeat_id is not None:
            self.repeatable[repeat_id] = (_canonical(job.body), job.job_id)

    def created(self, job: VendorJob, request: web.Request) -> web.StreamResponse:
        headers = {**self._location(request, job.job_id), **retry_after(job)}
        if request.headers.get(_REPEAT) is not None:
            headers["Repeatability-Result"] = "accepted"
        return web.Response(status=202, headers=headers)

    def render(self, job: VendorJob, request: web.Request) -> dict[str, Any]:
        return self._job(job)

    def missing(self, job_id: str) -> str:
        return f"The job {job_id} was not found."

    def cancelled(self, job: VendorJob, request: web.Request) -> web.Response:
        return web.Response(status=202, headers=self._location(request, job.job_id))

    def too_late(self, job: VendorJob, request: web.Request) -> web.Response:
        return self.error(400, f"The job {job.job_id} has already finished.")

    # -- what the skeleton does not do ----------------------------------------------------

    async def create(self, request: web.Request) -> web.StreamResponse:
        """The same Repeatability-Request-ID and body again replay the first answer; the
        same id with another body is 409 `rejected`; anything else is the skeleton's."""
        repeat_id = request.headers.get(_REPEAT)
        if repeat_id in self.repeatable and await self.refused(request) is None:
            body = strip_sim(await json_body(request))
            if self.invalid(body, request) is None:
                first_body, job_id = self.repeatable[str(repeat_id)]
                if first_body != _canonical(body):
                    self.state.record(MODE, "create", request, 409)
                    return self.error(
                        409,
                        "Repeatability-Request-ID was already used with another request.",
                        {"Repeatability-Result": "rejected"},
                    )
                self.state.record(MODE, "create", request, 202, job_id=job_id)
                headers = {**self._location(request, job_id), "Repeatability-Result": "accepted"}
                return web.Response(status=202, headers=headers)
        return await super().create(request)

    def _location(self, request: web.Request, job_id: str) -> dict[str, str]:
        version = request.query.get("api-version", "2023-04-01")
        return {"Operation-Location": f"{base_url(request)}{PREFIX}/{job_id}?api-version={version}"}

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


def _canonical(body: Any) -> str:
    return json.dumps(body, sort_keys=True)
