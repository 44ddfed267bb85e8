"""Amazon Bedrock batch inference as a code provider: one model invocation job per operation.

The operation's idempotency token is CreateModelInvocationJob's `clientRequestToken`:
Bedrock answers a repeated token with the job it made the first time ("ignores the request,
but does not return an error"), so after a lost create answer the worker sends the create
again under the same token, and that answer names the one job. Bedrock links its token to
the EC2 idempotency rules, under which a token is remembered for at least 24 hours: the
create deadline ends well within that. There is no other way back to a job (no lookup by
anything of ours), so a retry that is refused, or that never answers, stops for a person.

The result deadline is written, in whole hours, as `timeoutDurationInHours` (Bedrock takes
24 to 168): Bedrock stops the job by itself then, whatever jobtrail is doing. A job that
passes it while running ends `PartiallyCompleted` (the records it finished are in its
output: collected, marked partial, the operation `failed`), one that never began `Expired`.

    create     CreateModelInvocationJob(clientRequestToken = token, the body's parameters,
               timeoutDurationInHours from the result deadline)  -> Accepted (the job's ARN)
    status     GetModelInvocationJob  -> Observed (Submitted, Validating, Scheduled,
               InProgress and Stopping: running; Completed: succeeded; Failed, Expired and
               PartiallyCompleted: failed; Stopped: cancelled), with the record counts as usage
    cancel     StopModelInvocationJob  -> CancelAcknowledged; `cancelled` only once
               GetModelInvocationJob says Stopped
    result     the output file `<output s3Uri>/<job id>/<input file>.out` (S3 GetObject),
               JSON Lines of records by `recordId`, a record with an `error` a failed item
    census     ListModelInvocationJobs(nameContains "jobtrail-", newest first): a job name
               jobtrail built (`jobtrail-op-…`) names its operation; a name the body set
               carries no marker

The request body is CreateModelInvocationJob's parameters (`modelId`, `inputDataConfig`,
`outputDataConfig`, optionally `jobName`, `roleArn`, `tags`, `vpcConfig`); `roleArn` may be
given once in the settings (`role_arn`) instead. Settings: `role_arn`, `region`,
`endpoint_url`, `s3_endpoint_url` (where the output is read; the AWS default without it),
`timeout`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from datetime import timedelta
from typing import Any

from jobtrail.core import outcomes as o
from jobtrail.core.census import Listed
from jobtrail.core.classify import classify
from jobtrail.core.model import AttemptKind, Capabilities, Idempotency, Operation, ResultMode
from jobtrail.core.remote_deadline import RemoteDeadline
from jobtrail.core.states import RemoteStatus
from jobtrail.errors import ProviderConfigError
from jobtrail.providers.aws.calls import REQUIRES as REQUIRES
from jobtrail.providers.aws.calls import (
    SECRET_ENV,
    Answer,
    AwsCalls,
    AwsSettings,
    Failure,
    plugin_version,
    text_setting,
)
from jobtrail.providers.aws.dispatch import AwsProvider
from jobtrail.providers.aws.listings import listed, listed_page, operation_marker
from jobtrail.providers.code.contract import Factory, Listing
from jobtrail.providers.file.spec import ItemsRule, ResultSpec
from jobtrail.providers.protocol import Fetched, Reply

NAME = "aws-bedrock-batch"
STATES = {
    "Submitted": RemoteStatus.RUNNING,
    "Validating": RemoteStatus.RUNNING,
    "Scheduled": RemoteStatus.RUNNING,
    "InProgress": RemoteStatus.RUNNING,
    "Stopping": RemoteStatus.RUNNING,
    "Completed": RemoteStatus.SUCCEEDED,
    "Failed": RemoteStatus.FAILED,
    "Expired": RemoteStatus.FAILED,
    "PartiallyCompleted": RemoteStatus.FAILED,
    "Stopped": RemoteStatus.CANCELLED,
}
# the ends whose output holds what the job finished before it stopped
_PARTIAL = frozenset({"Stopped", "PartiallyCompleted"})
CAPABILITIES = Capabilities(
    idempotency=Idempotency.BODY,  # clientRequestToken
    same_token_retry=True,
    token_kept_for=24 * 3600.0,
    cancel=True,
    result=ResultMode.ENDPOINT,
)
USAGE = {
    "records": "totalRecordCount",
    "processed_records": "processedRecordCount",
    "succeeded_records": "successRecordCount",
    "failed_records": "errorRecordCount",
}
_NOT_TOKEN = re.compile(r"[^A-Za-z0-9]+")
_NAME_CHARS = re.compile(r"[^A-Za-z0-9]+")
MAX_OUTPUT = 100 * 1000**2


def client_token(token: str) -> str:
    """The idempotency token as Bedrock takes it (letters and digits, single hyphens)."""
    return _NOT_TOKEN.sub("-", token).strip("-")


def job_name(op: Operation) -> str:
    """A job name from the operation id (letters, digits and hyphens, up to 63)."""
    return ("jobtrail-" + _NAME_CHARS.sub("-", op.operation_id).strip("-"))[:63]


class BedrockBatchProvider(AwsProvider):
    """Batch inference jobs in one account and region. `call` never raises."""

    capabilities = CAPABILITIES
    deadlines: Mapping[str, str | timedelta] = {"create": "10m", "result": "72h", "cancel": "1h"}
    poll: Mapping[str, Any] = {"initial": "1m", "cap": "10m"}
    secret_env = SECRET_ENV
    own_fields = ("clientRequestToken",)  # the operation's token, written at every create
    remote_deadline = RemoteDeadline(field="timeoutDurationInHours", unit="h", least=24, most=168)
    result = ResultSpec(
        jsonl=True,
        items=ItemsRule(ref=("recordId",), status="error.errorCode", success=("",)),
    )

    no_lookup = "Bedrock offers no lookup by client request token"

    def __init__(
        self, *, aws: AwsSettings, s3: AwsSettings, role_arn: str | None, name: str = NAME
    ) -> None:
        self.name, self.role_arn = name, role_arn
        self.version = plugin_version()
        self.timeout = aws.call_limit
        self.calls = AwsCalls("bedrock", aws)
        self.s3 = AwsCalls("s3", s3, s3={"addressing_style": "path"})

    def describe(self, kind: AttemptKind, op: Operation) -> dict[str, Any]:
        """What is about to be sent: action, endpoint and identifiers, never credentials."""
        what: dict[str, Any] = {"service": "bedrock", "endpoint": self.calls.where()}
        match kind:
            case AttemptKind.CREATE:
                what |= {"action": "CreateModelInvocationJob"}
                what["clientRequestToken"] = client_token(op.idempotency_token)
                what["timeoutDurationInHours"] = _body(op).get("timeoutDurationInHours")
            case AttemptKind.CANCEL:
                what |= {"action": "StopModelInvocationJob", "jobIdentifier": op.remote_job_id}
            case AttemptKind.RESULT:
                what |= {"action": "GetObject", "service": "s3", "jobArn": op.remote_job_id}
            case AttemptKind.RECONCILE:
                what["unsendable"] = "Bedrock offers no lookup: a lost answer is resolved by token"
            case _:
                what |= {"action": "GetModelInvocationJob", "jobIdentifier": op.remote_job_id}
        return what

    census_sees = (
        "every batch inference job named by jobtrail (ListModelInvocationJobs, nameContains "
        "jobtrail-, newest first), the operation read from the job name; a job whose name the "
        "request set is not seen"
    )
    list_page = 100  # jobs per ListModelInvocationJobs page (AWS allows up to 1000)

    async def list_jobs(self, cursor: str | None) -> Listing:
        """One ListModelInvocationJobs page (providers/aws/listings.py reads it)."""
        params: dict[str, Any] = {"nameContains": "jobtrail-", "maxResults": self.list_page}
        params |= {"sortBy": "CreationTime", "sortOrder": "Descending"}
        return await listed_page(self.calls, "ListModelInvocationJobs", params, cursor, _summary)

    async def close(self) -> None:
        await self.calls.close()
        await self.s3.close()

    # -- calls ---------------------------------------------------------------------------

    def _params(self, op: Operation) -> dict[str, Any]:
        params = dict(_body(op))
        params["clientRequestToken"] = client_token(op.idempotency_token)
        params.setdefault("jobName", job_name(op))
        if self.role_arn is not None:
            params.setdefault("roleArn", self.role_arn)
        return params

    async def _start(self, op: Operation) -> Reply:
        made = await self.calls.invoke("CreateModelInvocationJob", self._params(op))
        if isinstance(made, Failure):
            return Reply(outcome=classify(AttemptKind.CREATE, made), detail=made.detail)
        arn = made.body.get("jobArn")
        if not isinstance(arn, str) or not arn:
            reason = "CreateModelInvocationJob answered without a jobArn"
            outcome = o.Ambiguous(
                reason=reason, http_status=made.http_status, request_id=made.request_id
            )
            return Reply(outcome=outcome, detail=dict(made.detail, error=reason))
        accepted = o.Accepted(
            job_id=arn,
            remote_state=None,  # the answer says nothing of the job's state
            remote_status=RemoteStatus.UNKNOWN,
            http_status=made.http_status,
            request_id=made.request_id,
        )
        return Reply(outcome=accepted, detail=made.detail)

    async def _status(self, op: Operation) -> Reply:
        seen = await self._get(op)
        if isinstance(seen, Failure):
            return Reply(outcome=classify(AttemptKind.STATUS, seen), detail=seen.detail)
        body, detail = seen.body, dict(seen.detail)
        state = body.get("status")
        status = STATES.get(state, RemoteStatus.UNKNOWN) if isinstance(state, str) else None
        status = status or RemoteStatus.UNKNOWN
        if status in (RemoteStatus.FAILED, RemoteStatus.CANCELLED) and body.get("message"):
            detail["provider_error"] = {"code": state, "message": str(body["message"])[:2000]}
        usage = {k: body[v] for k, v in USAGE.items() if isinstance(body.get(v), int)}
        processed = body.get("processedRecordCount")
        observed = o.Observed(
            remote_state=state if isinstance(state, str) else None,
            remote_status=status,
            progress={"processed": processed, "total": body.get("totalRecordCount")},
            provider_updated_at=str(body["lastModifiedTime"])
            if body.get("lastModifiedTime")
            else None,
            http_status=seen.http_status,
            request_id=seen.request_id,
            partial_result=state in _PARTIAL and isinstance(processed, int) and processed > 0,
            usage=dict(usage) or None,
        )
        return Reply(outcome=observed, detail=detail)

    async def _stop(self, op: Operation) -> Reply:
        return await self._send_stop(
            "StopModelInvocationJob", {"jobIdentifier": op.remote_job_id or ""}
        )

    async def _result(self, op: Operation) -> Reply:
        seen = await self._get(op)
        if isinstance(seen, Failure):
            return Reply(outcome=classify(AttemptKind.RESULT, seen), detail=seen.detail)
        where = output_key(seen.body, op.remote_job_id or "")
        if where is None:
            reason = "the job names no S3 input and output to read its result from"
            return Reply(outcome=o.ResultMissing(reason=reason), detail={"error": reason})
        bucket, key = where
        got = await self.s3.invoke("GetObject", {"Bucket": bucket, "Key": key})
        detail: dict[str, Any] = {"describe": seen.detail, "get_object": got.detail}
        if isinstance(got, Failure):
            return Reply(outcome=classify(AttemptKind.RESULT, got), detail=detail)
        stream = got.body.get("Body")
        try:
            content = await stream.read(MAX_OUTPUT + 1) if stream is not None else b""
        except Exception as exc:  # the body broke off mid-read: the outcome is unknown
            reason = f"GetObject's body could not be read ({type(exc).__name__})"
            return Reply(outcome=o.Ambiguous(reason=reason), detail=dict(detail, error=reason))
        finally:
            if stream is not None:
                stream.close()
        if len(content) > MAX_OUTPUT:
            reason = f"the output is larger than {MAX_OUTPUT} bytes"
            return Reply(outcome=o.ResultMissing(reason=reason), detail=dict(detail, error=reason))
        fetched = Fetched(
            content=content,
            content_type=got.body.get("ContentType"),
            http_status=got.http_status,
            request_id=got.request_id,
            jsonl=True,
        )
        return Reply(outcome=None, detail=detail, fetched=fetched)

    async def _get(self, op: Operation) -> Answer | Failure:
        return await self.calls.invoke(
            "GetModelInvocationJob", {"jobIdentifier": op.remote_job_id or ""}
        )


def output_key(job: Mapping[str, Any], arn: str) -> tuple[str, str] | None:
    """(bucket, key) of the output file of a job reading one input file: Bedrock writes
    `<input file>.out` under `<output s3Uri>/<job id>/`."""
    try:
        source = job["inputDataConfig"]["s3InputDataConfig"]["s3Uri"]
        target = job["outputDataConfig"]["s3OutputDataConfig"]["s3Uri"]
    except (KeyError, TypeError):
        return None
    if not (isinstance(source, str) and isinstance(target, str)):
        return None
    name = source.rstrip("/").rpartition("/")[2]
    bucket, _, prefix = target.removeprefix("s3://").partition("/")
    job_id = arn.rpartition("/")[2]
    if not (bucket and name and job_id) or source.endswith("/"):
        return None
    folder = (prefix.rstrip("/") + "/") if prefix else ""
    return bucket, f"{folder}{job_id}/{name}.out"


def _body(op: Operation) -> dict[str, Any]:
    return dict(op.request.body) if isinstance(op.request.body, dict) else {}


def _summary(item: dict[str, Any]) -> Listed | None:
    """A ListModelInvocationJobs summary: a job name jobtrail built names its operation."""
    ours = operation_marker(item.get("jobName"))
    return listed(item, arn_key="jobArn", marker=ours, created_key="submitTime", states=STATES)


def factory(settings: Mapping[str, Any]) -> BedrockBatchProvider:
    """The provider for a `[settings]` table (see the module's docstring)."""
    aws = AwsSettings.read(settings, frozenset({"role_arn", "s3_endpoint_url"}))
    s3_endpoint = text_setting(settings, "s3_endpoint_url")
    if s3_endpoint is not None and not s3_endpoint.startswith(("http://", "https://")):
        raise ProviderConfigError(f"s3_endpoint_url must be an http(s) URL, not {s3_endpoint!r}")
    s3 = replace(aws, endpoint_url=s3_endpoint)
    return BedrockBatchProvider(aws=aws, s3=s3, role_arn=text_setting(settings, "role_arn"))


CHECKED: Factory = factory  # mypy proves the provider follows the CodeProvider contract
