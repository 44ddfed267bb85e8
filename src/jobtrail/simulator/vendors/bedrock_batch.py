"""``bedrock-batch``: Amazon Bedrock batch inference under ``/bedrock``, its output under
``/bedrock-s3`` (S3, path-style), every request checked for a real SigV4 signature.

Written from the Amazon Bedrock API reference (CreateModelInvocationJob,
GetModelInvocationJob, StopModelInvocationJob, ListModelInvocationJobs; the
``ModelInvocationJobStatus`` values),
the user guide's "Process multiple prompts with batch inference" (the output files: one
``<input file>.out`` JSON Lines file per input file, records with ``recordId`` and
``modelOutput`` or ``error``, and ``manifest.json.out`` with the record and token counts,
under ``<output s3Uri>/<job id>/``) and the REST-JSON protocol botocore implements (errors
named in ``x-amzn-ErrorType``). ``POST /model-invocation-job`` answers ``{"jobArn"}``; a
``clientRequestToken`` seen before with the same request is answered with the job it made
("Amazon Bedrock ignores the request, but does not return an error"), with another request
with a ``ValidationException`` (the EC2 idempotency rules the reference links to). A job is
``Submitted``, ``Validating``, ``Scheduled``, ``InProgress``, then ``Completed``, ``Failed``,
``Stopping`` and ``Stopped`` after StopModelInvocationJob, ``Expired`` (its
``timeoutDurationInHours``, 24 to 168, passed before it began) or ``PartiallyCompleted``
(passed while it ran: the records done are in its output). ``GetModelInvocationJob`` counts
``totalRecordCount``, ``processedRecordCount``, ``successRecordCount``, ``errorRecordCount``.
``GET /model-invocation-jobs`` lists ``invocationJobSummaries`` (``nameContains``,
``sortOrder`` by ``CreationTime``, ``maxResults`` 1-1000, ``nextToken``).

Requests are signed by botocore's SigV4 (service ``bedrock``; ``s3`` for the output) with
the keys in ``VendorState.aws_keys``; anything else is refused as AWS refuses it.
"""

from __future__ import annotations

import json
import secrets
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote

from aiohttp import web

from jobtrail.simulator.answers import compact_json, json_response
from jobtrail.simulator.vendors import sigv4
from jobtrail.simulator.vendors.shared import VendorJob, json_body
from jobtrail.simulator.vendors.skeleton import VendorMode

MODE = "bedrock-batch"
PREFIX = "/bedrock"
S3_PREFIX = "/bedrock-s3"
ACCOUNT, REGION = "123456789012", "us-east-1"
_HOUR = 3600
_STATUS = {
    "pending": "Submitted",
    "running": "InProgress",
    "cancelling": "Stopping",
    "succeeded": "Completed",
    "failed": "Failed",
}


class BedrockBatch(VendorMode):
    mode = MODE

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post(f"{PREFIX}/model-invocation-job", self.create)
        app.router.add_get(f"{PREFIX}/model-invocation-job/{{job_id}}", self.retrieve)
        app.router.add_post(f"{PREFIX}/model-invocation-job/{{job_id}}/stop", self.cancel)
        app.router.add_get(f"{PREFIX}/model-invocation-jobs", self.list_jobs)
        app.router.add_get(f"{S3_PREFIX}/{{bucket}}/{{key:.+}}", self.object)

    # -- the vendor's words --------------------------------------------------------------

    def error(self, status: int, message: str) -> web.Response:
        kind = {
            400: "ValidationException",
            403: "AccessDeniedException",
            404: "ResourceNotFoundException",
            500: "InternalServerException",
        }.get(status, "InternalServerException")
        return _aws_error(status, kind, message)

    async def refused(self, request: web.Request) -> web.Response | None:
        service = "s3" if request.path.startswith(S3_PREFIX + "/") else "bedrock"
        body = await request.read()
        url = f"{request.scheme}://{request.host}{request.raw_path}"
        found = sigv4.problem(
            request.method, url, request.headers, body, service=service, keys=self.state.aws_keys
        )
        if found is None:
            return None
        return _aws_error(403, found[0], found[1])

    def job_id(self, request: web.Request) -> str:
        """The job id from a jobIdentifier: the job's ARN (percent-encoded) or its id."""
        return unquote(request.match_info["job_id"]).rpartition("/")[2]

    def missing(self, job_id: str) -> str:
        return f"The specified job {job_id} could not be found."

    def invalid(self, body: Any, request: web.Request) -> str | None:
        if not isinstance(body, dict):
            return "The request body must be a JSON object"
        for key in ("jobName", "roleArn", "modelId", "inputDataConfig", "outputDataConfig"):
            if key not in body:
                return f"1 validation error detected: Value null at '{key}'"
        hours = body.get("timeoutDurationInHours")
        if hours is not None and (not isinstance(hours, int) or not 24 <= hours <= 168):
            return "timeoutDurationInHours must be between 24 and 168"
        return None

    async def create(self, request: web.Request) -> web.StreamResponse:
        refusal = await self.refused(request)
        body = await json_body(request) if refusal is None else None
        token = body.get("clientRequestToken") if isinstance(body, dict) else None
        earlier = self._by_token(token)
        if refusal is None and earlier is not None:
            if _request(earlier.body) != _request(body):
                response = self.error(
                    400, "The clientRequestToken was used before with a different request"
                )
            else:  # the same request again: the job it made, no second one
                response = json_response(200, {"jobArn": _arn(earlier.job_id)})
            self.state.record(MODE, "create", request, response.status, job_id=earlier.job_id)
            return response
        return await super().create(request)

    def made(self, job: VendorJob, request: web.Request) -> None:
        job.job_id = secrets.token_hex(6)  # 12 lowercase characters, as Bedrock's ids
        hours = job.body.get("timeoutDurationInHours", 168)
        job.deadline_ts = job.created_ts + hours * _HOUR
        job.tag = job.body.get("clientRequestToken")

    def created(self, job: VendorJob, request: web.Request) -> web.StreamResponse:
        return json_response(200, {"jobArn": _arn(job.job_id)})

    def cancelled(self, job: VendorJob, request: web.Request) -> web.Response:
        return json_response(200, {})

    def too_late(self, job: VendorJob, request: web.Request) -> web.Response:
        return self.error(400, f"The job {job.job_id} is {self._status(job)}; it cannot be stopped")

    def _status(self, job: VendorJob) -> str:
        if job.phase == "cancelled":
            if job.timed_out:
                return "PartiallyCompleted" if job.reads > 0 else "Expired"
            return "Stopped"
        return _STATUS[job.phase]

    def _by_token(self, token: Any) -> VendorJob | None:
        if not isinstance(token, str):
            return None
        jobs = self.state.jobs.get(MODE, {}).values()
        return next((j for j in jobs if j.tag == token), None)

    def _done(self, job: VendorJob) -> tuple[int, int]:
        """(succeeded, failed) records in the job's output."""
        f = job.faults
        status = self._status(job)
        if status == "Completed":
            return f.items - f.failed_items, f.failed_items
        if status == "Stopped":
            return min(f.in_flight_items, f.items), 0
        if status == "PartiallyCompleted":
            return min(f.finished_before_expiry, f.items), 0
        return 0, 0

    def render(self, job: VendorJob, request: web.Request) -> dict[str, Any]:
        status, body = self._status(job), job.body
        ok, bad = self._done(job)
        out: dict[str, Any] = {
            "jobArn": _arn(job.job_id),
            "jobName": body["jobName"],
            "modelId": body["modelId"],
            "clientRequestToken": body.get("clientRequestToken"),
            "roleArn": body["roleArn"],
            "status": status,
            "submitTime": _when(job.created_ts),
            "lastModifiedTime": _when(job.ended_ts or job.created_ts),
            "inputDataConfig": body["inputDataConfig"],
            "outputDataConfig": body["outputDataConfig"],
            "timeoutDurationInHours": body.get("timeoutDurationInHours", 168),
            "jobExpirationTime": _when(job.deadline_ts),
            "totalRecordCount": job.faults.items,
            "processedRecordCount": ok + bad,
            "successRecordCount": ok,
            "errorRecordCount": bad,
        }
        if job.terminal:
            out["endTime"] = _when(job.ended_ts)
            self._write_output(job, ok, bad)
        if status == "Failed":
            out["message"] = "The input file is not valid JSON Lines."
        return out

    async def list_jobs(self, request: web.Request) -> web.Response:
        """ListModelInvocationJobs: summaries, newest first unless `sortOrder=Ascending`,
        filtered by `nameContains`, paged by `maxResults` and an opaque `nextToken`."""
        refusal = await self.refused(request)
        if refusal is not None:
            self.state.record(MODE, "list", request, refusal.status)
            return refusal
        query = request.query
        try:
            size = int(query.get("maxResults", "1000"))
            start = int(query.get("nextToken", "0"))
        except ValueError:
            return self.error(400, "maxResults and nextToken must be what the API gave")
        if not 1 <= size <= 1000:
            return self.error(400, "maxResults must be between 1 and 1000")
        part = query.get("nameContains", "")
        jobs = self.listed(request, lambda j: part in str(j.body.get("jobName", "")))
        if query.get("sortOrder") == "Ascending":
            jobs.reverse()
        page = jobs[start : start + size]  # as last read: a listing moves no job forward
        summaries = [
            {k: v for k, v in self.render(job, request).items() if not k.endswith("RecordCount")}
            for job in page
        ]
        answer: dict[str, Any] = {"invocationJobSummaries": summaries}
        if start + size < len(jobs):
            answer["nextToken"] = str(start + size)
        return json_response(200, answer)

    # -- the output in S3 -----------------------------------------------------------------

    def _write_output(self, job: VendorJob, ok: int, bad: int) -> None:
        if job.extra.get("written") or self._status(job) in ("Failed", "Expired"):
            return
        job.extra["written"] = True
        bucket, prefix = _s3(job.body["outputDataConfig"]["s3OutputDataConfig"]["s3Uri"])
        source = job.body["inputDataConfig"]["s3InputDataConfig"]["s3Uri"].rstrip("/")
        name = source.rpartition("/")[2] or "input.jsonl"
        lines = [_record(n, ok=True) for n in range(ok)]
        lines += [_record(n, ok=False) for n in range(ok, ok + bad)]
        folder = f"{bucket}/{prefix}{job.job_id}/"
        self.state.files[folder + f"{name}.out"] = ("application/octet-stream", b"".join(lines))
        manifest = {
            "totalRecordCount": job.faults.items,
            "processedRecordCount": ok + bad,
            "successRecordCount": ok,
            "errorRecordCount": bad,
            "inputTokenCount": 40 * (ok + bad),
            "outputTokenCount": 25 * ok,
        }
        self.state.files[folder + "manifest.json.out"] = (
            "application/json",
            compact_json(manifest),
        )

    async def object(self, request: web.Request) -> web.Response:
        refusal = await self.refused(request)
        key = f"{request.match_info['bucket']}/{unquote(request.match_info['key'])}"
        file = self.state.files.get(key)
        if refusal is not None:
            response = refusal
        elif file is None:
            response = web.Response(
                status=404,
                body=b"<Error><Code>NoSuchKey</Code><Message>The specified key does not exist."
                b"</Message></Error>",
                content_type="application/xml",
            )
        else:
            response = web.Response(status=200, body=file[1], content_type=file[0])
        self.state.record(MODE, "result", request, response.status)
        return response


def _aws_error(status: int, kind: str, message: str) -> web.Response:
    return web.Response(
        status=status,
        body=json.dumps({"message": message}).encode(),
        content_type="application/json",
        headers={"x-amzn-ErrorType": kind},
    )


def _arn(job_id: str) -> str:
    return f"arn:aws:bedrock:{REGION}:{ACCOUNT}:model-invocation-job/{job_id}"


def _when(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC).isoformat()


def _s3(uri: str) -> tuple[str, str]:
    """(bucket, key prefix ending in /) of an s3:// URI."""
    rest = uri.removeprefix("s3://")
    bucket, _, prefix = rest.partition("/")
    return bucket, (prefix.rstrip("/") + "/") if prefix else ""


def _request(body: Any) -> Any:
    return None if not isinstance(body, dict) else {k: v for k, v in body.items() if k != "_sim"}


def _record(n: int, *, ok: bool) -> bytes:
    record: dict[str, Any] = {"recordId": f"CALL{n + 1:07d}", "modelInput": {"prompt": "..."}}
    if ok:
        record["modelOutput"] = {"completion": f"answer {n + 1}", "stop_reason": "end_turn"}
    else:
        record["error"] = {"errorCode": 400, "errorMessage": "Malformed input request"}
    return compact_json(record) + b"\n"
