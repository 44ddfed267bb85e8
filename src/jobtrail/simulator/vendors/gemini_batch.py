"""``gemini-batch``: the Gemini API's Batch Mode under ``/gemini/v1beta``.

From the Gemini API reference (Batch API): ``POST /v1beta/models/{model}:batchGenerateContent``
with ``{"batch": {"displayName", "inputConfig"}}`` answers an Operation named
``batches/{id}`` whose ``metadata`` is the GenerateContentBatch (``state``:
``BATCH_STATE_PENDING``, ``_RUNNING``, ``_SUCCEEDED``, ``_FAILED``, ``_CANCELLED``,
``_EXPIRED``; ``batchStats``; ``displayName``). ``GET /v1beta/batches/{id}`` reads it; once
``done`` it carries ``response`` (inlined responses, or a ``responsesFile`` to download for a
file input, one JSON line per request with its ``key``) or ``error``.
``POST /v1beta/batches/{id}:cancel`` answers ``{}``. ``GET /v1beta/batches`` lists
operations (``pageSize``, ``pageToken``). There is no request id: the client's own words
live in ``displayName``, which the list shows. Errors are Google's
``{"error": {"code", "message", "status"}}``.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from jobtrail.simulator.answers import compact_json, json_response
from jobtrail.simulator.vendors.shared import VendorJob, rfc3339
from jobtrail.simulator.vendors.skeleton import VendorMode

MODE = "gemini-batch"
PREFIX = "/gemini/v1beta"
_TYPE = "type.googleapis.com/google.ai.generativelanguage.v1main"
_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 404: "NOT_FOUND", 500: "INTERNAL"}


def _error(status: int, message: str) -> web.Response:
    body = {"error": {"code": status, "message": message, "status": _STATUS.get(status, "UNKNOWN")}}
    return json_response(status, body)


class GeminiBatch(VendorMode):
    mode = MODE

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post(f"{PREFIX}/models/{{model}}:batchGenerateContent", self.create)
        app.router.add_get(f"{PREFIX}/batches", self.list)
        app.router.add_get(f"{PREFIX}/batches/{{job_id}}", self.retrieve)
        app.router.add_post(f"{PREFIX}/batches/{{job_id}}:cancel", self.cancel)
        app.router.add_get("/gemini/download/v1beta/files/{file_id}:download", self.download)

    def authorized(self, request: web.Request) -> bool:
        key = request.headers.get("x-goog-api-key") or request.query.get("key")
        return self.state.auth_ok(key)

    def error(self, status: int, message: str) -> web.Response:
        return _error(status, "Internal error encountered." if status >= 500 else message)

    async def refused(self, request: web.Request) -> web.Response | None:
        if self.authorized(request):
            return None
        return _error(401, "API key not valid. Please pass a valid API key.")

    def invalid(self, body: Any, request: web.Request) -> str | None:
        parsed = _batch_request(body)
        return parsed if isinstance(parsed, str) else None

    def made(self, job: VendorJob, request: web.Request) -> None:
        parsed = _batch_request(job.body)
        assert not isinstance(parsed, str)
        display_name, keys, from_file = parsed
        if from_file:
            # a JSONL input file of `items` lines, keyed by line
            keys = [f"request-{n + 1}" for n in range(job.faults.items)]
        job.tag = display_name
        job.extra.update(keys=keys, file=from_file, model=request.match_info["model"])

    def missing(self, job_id: str) -> str:
        return f"Batch batches/{job_id} not found."

    def cancelled(self, job: VendorJob, request: web.Request) -> web.Response:
        return json_response(200, {})

    def too_late(self, job: VendorJob, request: web.Request) -> web.Response:
        # Google's cancel is best effort: asking again, or after the end, is no error
        return json_response(200, {})

    def render(self, job: VendorJob, request: web.Request) -> dict[str, Any]:
        return self._operation(job)

    async def list(self, request: web.Request) -> web.Response:
        st = self.state
        if not self.authorized(request):
            return _error(401, "API key not valid. Please pass a valid API key.")
        size = max(1, min(1000, int(request.query.get("pageSize", "50") or 50)))
        start = int(request.query.get("pageToken", "0") or 0)
        jobs = st.listed(MODE)
        page = [self._operation(j) for j in jobs[start : start + size]]
        out: dict[str, Any] = {"operations": page}
        if start + size < len(jobs):
            out["nextPageToken"] = str(start + size)
        st.record(MODE, "list", request, 200)
        return json_response(200, out)

    async def download(self, request: web.Request) -> web.Response:
        st = self.state
        name = f"files/{request.match_info['file_id']}"
        file = st.files.get(name)
        if not self.authorized(request):
            response = _error(401, "API key not valid. Please pass a valid API key.")
        elif file is None or request.query.get("alt") != "media":
            response = _error(404, f"File {name} not found.")
        else:
            response = web.Response(status=200, body=file[1], content_type=file[0])
        st.record(MODE, "result", request, response.status)
        return response

    # -- the Operation ------------------------------------------------------

    def _state(self, job: VendorJob) -> str:
        if job.phase == "cancelled":
            return "BATCH_STATE_CANCELLED" if job.cancel_requested else "BATCH_STATE_EXPIRED"
        word = {"pending": "PENDING", "cancelling": "RUNNING"}.get(job.phase, job.phase.upper())
        return f"BATCH_STATE_{word}"

    def _operation(self, job: VendorJob) -> dict[str, Any]:
        keys: list[str] = job.extra["keys"]
        outcomes = _outcomes(job)
        ok = sum(1 for _, good in outcomes if good)
        metadata = {
            "@type": f"{_TYPE}.GenerateContentBatch",
            "model": f"models/{job.extra['model']}",
            "name": f"batches/{job.job_id}",
            "displayName": job.tag,
            "createTime": rfc3339(job.created_ts),
            "updateTime": rfc3339(job.ended_ts or job.created_ts),
            "batchStats": {
                "requestCount": str(len(keys)),
                "successfulRequestCount": str(ok),
                "failedRequestCount": str(len(outcomes) - ok),
                "pendingRequestCount": str(len(keys) - len(outcomes)),
            },
            "state": self._state(job),
        }
        if job.ended_ts is not None:
            metadata["endTime"] = rfc3339(job.ended_ts)
        out: dict[str, Any] = {"name": f"batches/{job.job_id}", "metadata": metadata}
        if not job.terminal:
            return out
        out["done"] = True
        if job.phase == "succeeded":
            out["response"] = {"@type": f"{_TYPE}.GenerateContentBatchOutput", **self._output(job)}
        elif job.phase == "failed":
            out["error"] = {"code": 13, "message": "Batch failed: internal error while processing."}
        elif job.cancel_requested:
            out["error"] = {"code": 1, "message": "Batch was cancelled."}
        else:
            out["error"] = {"code": 4, "message": "Batch expired before it could finish."}
        return out

    def _output(self, job: VendorJob) -> dict[str, Any]:
        items = [_item(key, good) for key, good in _outcomes(job)]
        if not job.extra["file"]:
            return {"inlinedResponses": {"inlinedResponses": items}}
        name = f"files/batch-{job.job_id}"
        if name not in self.state.files:
            # one line per request: its `key`, then its response or error (no metadata)
            lines = b"".join(
                compact_json(
                    {"key": i["metadata"]["key"], **{k: v for k, v in i.items() if k != "metadata"}}
                )
                + b"\n"
                for i in items
            )
            self.state.files[name] = ("application/jsonl", lines)
        return {"responsesFile": name}


def _outcomes(job: VendorJob) -> list[tuple[str, bool]]:
    """(key, succeeded) per request that ended: none until the batch succeeded."""
    keys: list[str] = job.extra["keys"]
    if job.phase != "succeeded":
        return []
    failed = min(job.faults.failed_items, len(keys))
    return [(key, n < len(keys) - failed) for n, key in enumerate(keys)]


def _item(key: str, good: bool) -> dict[str, Any]:
    if good:
        text = {"parts": [{"text": f"answer for {key}"}], "role": "model"}
        return {
            "response": {"candidates": [{"content": text, "finishReason": "STOP"}]},
            "metadata": {"key": key},
        }
    return {
        "error": {"code": 3, "message": "Request contains an invalid argument."},
        "metadata": {"key": key},
    }


def _batch_request(body: Any) -> tuple[str, list[str], bool] | str:
    """(displayName, request keys, input from a file) or why the body is refused."""
    batch = body.get("batch") if isinstance(body, dict) else None
    if not isinstance(batch, dict):
        return "Invalid JSON payload: `batch` is required."
    name = batch.get("displayName", batch.get("display_name"))
    if not isinstance(name, str) or not name:
        return "batch.display_name is required."
    config = batch.get("inputConfig", batch.get("input_config"))
    if not isinstance(config, dict):
        return "batch.input_config is required."
    file_name = config.get("fileName", config.get("file_name"))
    if isinstance(file_name, str):
        return name, [], True
    requests = (config.get("requests") or {}).get("requests")
    if not isinstance(requests, list) or not requests:
        return "batch.input_config.requests.requests must not be empty."
    keys = []
    for n, item in enumerate(requests):
        meta = item.get("metadata") if isinstance(item, dict) else None
        key = meta.get("key") if isinstance(meta, dict) else None
        keys.append(key if isinstance(key, str) else f"{n + 1}")
    return name, keys, False
