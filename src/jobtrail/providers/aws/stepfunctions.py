"""AWS Step Functions (Standard workflows) as a code provider: one execution per operation.

The execution's `name` is the operation's idempotency token, so the name does what a token
does elsewhere. Step Functions keeps a Standard execution's name unique per state machine for
90 days after it closes, and documents StartExecution as idempotent: the same name and input
while the execution runs return that execution; after it has closed (or with another input)
the answer is `ExecutionAlreadyExists`. That answer is resolved here, not passed on as a
refusal: the execution is described at the ARN built from the name, and its input is compared
with ours. Same input: it is this operation's execution (`Accepted`, whatever its state).
Another input: the name is held by an execution that is not ours, nothing of ours was started
under it, and none can be (`Rejected`, with both answers kept).

The same DescribeExecution at the built ARN is the lookup after a lost create answer:
`ExecutionDoesNotExist` there says no execution of ours exists. AWS documents
DescribeExecution as eventually consistent, so that answer can be stale for a moment; it is
still safe to act on, because the create it leads to is sent under the same name, which can
only return the existing execution or `ExecutionAlreadyExists` (resolved as above).

    create     StartExecution(name = token, input = the body)  -> Accepted
    status     DescribeExecution  -> Observed (RUNNING and PENDING_REDRIVE: running,
               TIMED_OUT: failed, ABORTED: cancelled)
    cancel     StopExecution  -> CancelAcknowledged; `cancelled` comes only from a
               DescribeExecution that says ABORTED
    result     DescribeExecution's `output`  -> fetched JSON, validated by jobtrail
    reconcile  DescribeExecution at the ARN built from the name  -> Found
    census     ListExecutions on the state machine, newest first: each execution's name is
               our marker when it has the shape of our token (`idem_` + 32 characters)

A failed, timed-out or aborted execution's `error` and `cause` are kept on the status read as
the provider's error, which `explain` shows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from jobtrail.core import outcomes as o
from jobtrail.core.canonical import canonical_json
from jobtrail.core.census import Listed
from jobtrail.core.classify import classify
from jobtrail.core.model import AttemptKind, Capabilities, Idempotency, Operation, ResultMode
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
from jobtrail.providers.aws.listings import listed, listed_page, token_marker
from jobtrail.providers.code.contract import Factory, Listing, Marker
from jobtrail.providers.file.spec import ResultSpec
from jobtrail.providers.protocol import Fetched, Reply

NAME = "aws-stepfunctions"
STATES = {
    "RUNNING": RemoteStatus.RUNNING,
    "PENDING_REDRIVE": RemoteStatus.RUNNING,
    "SUCCEEDED": RemoteStatus.SUCCEEDED,
    "FAILED": RemoteStatus.FAILED,
    "TIMED_OUT": RemoteStatus.FAILED,
    "ABORTED": RemoteStatus.CANCELLED,
}
CAPABILITIES = Capabilities(
    idempotency=Idempotency.NATURAL,  # the execution name, chosen by us
    same_token_retry=True,
    status_by_client_id=True,  # DescribeExecution at the ARN built from the name
    # DescribeExecution is eventually consistent (AWS documents no bound): a name it does
    # not know yet proves no execution only a minute after the last StartExecution
    absent_after=60.0,
    cancel=True,
    result=ResultMode.ENDPOINT,
)
_STATE_MACHINE = re.compile(r"^arn:[\w-]+:states:[\w-]+:\d{12}:stateMachine:[\w-]{1,80}$")
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_MISSING = frozenset({"ExecutionDoesNotExist"})
CAUSE_LIMIT = 2000  # characters of a failure's cause kept on the record


def execution_name(token: str) -> str:
    """The execution name for an idempotency token: the token itself (`idem_` + base32 fits
    Step Functions' 1-80 letters, digits, `-` and `_`), so an execution is found by it."""
    name = _NAME_CHARS.sub("-", token)[:80]
    if not name:
        raise ValueError("an empty idempotency token names no execution")
    return name


def execution_arn(state_machine_arn: str, name: str) -> str:
    """arn:P:states:R:A:stateMachine:M -> arn:P:states:R:A:execution:M:NAME."""
    parts = state_machine_arn.split(":")
    return ":".join([*parts[:5], "execution", parts[6], name])


def execution_input(body: Any) -> str:
    """The request body as the execution's input: its canonical JSON (an empty object when
    there is none), so a retry sends exactly the bytes of the first attempt."""
    return canonical_json({} if body is None else body)


def same_input(seen: Any, ours: str) -> bool | None:
    """Whether an execution's input is ours, compared as JSON values; None if unreadable."""
    if not isinstance(seen, str):
        return None
    try:
        return canonical_json(json.loads(seen)) == ours
    except ValueError:
        return None


class StepFunctionsProvider(AwsProvider):
    """One state machine. `call` never raises for anything AWS or the network does."""

    capabilities = CAPABILITIES
    # The rest of the CodeProvider contract (providers/code/contract.py); a provider file's
    # [deadlines] and [poll] override these.
    deadlines: Mapping[str, str | timedelta] = {"create": "5m", "result": "24h", "cancel": "10m"}
    poll: Mapping[str, Any] = {"initial": "2s", "cap": "1m"}
    secret_env = SECRET_ENV
    result = ResultSpec(content_type="application/json")
    census_marker = Marker.TOKEN
    census_sees = (
        "every execution of the state machine (ListExecutions, newest first), the execution "
        "name read as our token"
    )
    list_page = 100  # executions per ListExecutions page (AWS allows up to 1000)

    def __init__(self, *, state_machine_arn: str, aws: AwsSettings, name: str = NAME) -> None:
        if not _STATE_MACHINE.match(state_machine_arn):
            raise ProviderConfigError(
                f"state_machine_arn {state_machine_arn!r} is not an unqualified Step Functions "
                "state machine ARN (arn:aws:states:REGION:ACCOUNT:stateMachine:NAME)"
            )
        self.name, self.state_machine_arn = name, state_machine_arn
        self.version = plugin_version()
        self.timeout = aws.call_limit
        self.calls = AwsCalls("stepfunctions", aws)

    def describe(self, kind: AttemptKind, op: Operation) -> dict[str, Any]:
        """What is about to be sent: action, endpoint and identifiers, never credentials."""
        name = execution_name(op.idempotency_token)
        what: dict[str, Any] = {"service": "states", "endpoint": self.calls.where()}
        match kind:
            case AttemptKind.CREATE:
                size = len(execution_input(op.request.body).encode("utf-8"))
                what |= {"action": "StartExecution", "stateMachineArn": self.state_machine_arn}
                what |= {"name": name, "input_bytes": size}
            case AttemptKind.CANCEL:
                what |= {"action": "StopExecution", "executionArn": op.remote_job_id}
            case AttemptKind.RECONCILE:
                arn = execution_arn(self.state_machine_arn, name)
                what |= {"action": "DescribeExecution", "executionArn": arn}
            case _:
                what |= {"action": "DescribeExecution", "executionArn": op.remote_job_id}
        return what

    # -- calls ---------------------------------------------------------------------------

    async def _start(self, op: Operation) -> Reply:
        name = execution_name(op.idempotency_token)
        ours = execution_input(op.request.body)
        params = {"stateMachineArn": self.state_machine_arn, "name": name, "input": ours}
        started = await self.calls.invoke("StartExecution", params)
        if isinstance(started, Answer):
            job = started.body.get("executionArn")
            if not isinstance(job, str) or not job:
                reason = "StartExecution answered without an executionArn"
                return Reply(outcome=_ambiguous(reason, started), detail=started.detail)
            accepted = o.Accepted(
                job_id=job,
                remote_state=None,  # StartExecution says nothing of the state
                remote_status=RemoteStatus.UNKNOWN,
                http_status=started.http_status,
                request_id=started.request_id,
            )
            return Reply(outcome=accepted, detail=started.detail)
        if started.code != "ExecutionAlreadyExists":
            return Reply(outcome=classify(AttemptKind.CREATE, started), detail=started.detail)
        return await self._resolve_existing(name, ours, started)

    async def _resolve_existing(self, name: str, ours: str, refusal: Failure) -> Reply:
        """`ExecutionAlreadyExists`: ours if the execution at our name has our input."""
        arn = execution_arn(self.state_machine_arn, name)
        seen = await self.calls.invoke("DescribeExecution", {"executionArn": arn})
        detail: dict[str, Any] = {"start": refusal.detail, "describe": seen.detail}
        if isinstance(seen, Failure):
            reason = f"the execution {name!r} exists but could not be read: {seen.reason}"
            detail["error"] = reason
            return Reply(outcome=o.Ambiguous(reason=reason), detail=detail)
        match same_input(seen.body.get("input"), ours):
            case True:
                state = seen.body.get("status")
                detail["resolved"] = "same name and same input: this operation's execution"
                accepted = o.Accepted(
                    job_id=arn,
                    remote_state=state if isinstance(state, str) else None,
                    remote_status=_status(state),
                    http_status=seen.http_status,
                    request_id=seen.request_id,
                )
                return Reply(outcome=accepted, detail=detail)
            case False:
                reason = (
                    f"the execution name {name!r} is held by an execution with another input: "
                    "it is not this operation's, and nothing was started under that name"
                )
                detail["error"] = reason
                rejected = o.Rejected(
                    reason=reason, http_status=refusal.http_status, request_id=refusal.request_id
                )
                return Reply(outcome=rejected, detail=detail)
        reason = f"the execution {name!r} exists but its input is not readable to compare"
        detail["error"] = reason
        return Reply(outcome=o.Ambiguous(reason=reason), detail=detail)

    async def _status(self, op: Operation) -> Reply:
        seen = await self._describe(op.remote_job_id)
        if isinstance(seen, Failure):
            return Reply(outcome=classify(AttemptKind.STATUS, seen), detail=seen.detail)
        state = seen.body.get("status")
        detail = dict(seen.detail)
        status = _status(state)
        if status in (RemoteStatus.FAILED, RemoteStatus.CANCELLED):
            why = _why(seen.body)
            if why is not None:
                detail["provider_error"] = why
        updated = seen.body.get("stopDate") or seen.body.get("redriveDate")
        observed = o.Observed(
            remote_state=state if isinstance(state, str) else None,
            remote_status=status,
            provider_updated_at=str(updated) if updated else None,
            http_status=seen.http_status,
            request_id=seen.request_id,
        )
        return Reply(outcome=observed, detail=detail)

    async def _stop(self, op: Operation) -> Reply:
        params = {
            "executionArn": op.remote_job_id or "",
            "error": "jobtrail.Cancelled",
            "cause": f"cancel requested through jobtrail (operation {op.operation_id})",
        }
        return await self._send_stop("StopExecution", params)

    async def _result(self, op: Operation) -> Reply:
        seen = await self._describe(op.remote_job_id)
        if isinstance(seen, Failure):
            return Reply(outcome=classify(AttemptKind.RESULT, seen), detail=seen.detail)
        output, state = seen.body.get("output"), seen.body.get("status")
        if state != "SUCCEEDED" or not isinstance(output, str):
            reason = (
                f"the execution is {state}, with no output to collect"
                if state != "SUCCEEDED"
                else "DescribeExecution returned no output for the succeeded execution"
            )
            detail = dict(seen.detail, error=reason)
            return Reply(outcome=o.ResultMissing(reason=reason), detail=detail)
        fetched = Fetched(
            content=output.encode("utf-8"),
            content_type="application/json",
            http_status=seen.http_status,
            request_id=seen.request_id,
        )
        return Reply(outcome=None, detail=seen.detail, fetched=fetched)

    async def _lookup(self, op: Operation) -> Reply:
        name = execution_name(op.idempotency_token)
        arn = execution_arn(self.state_machine_arn, name)
        seen = await self.calls.invoke("DescribeExecution", {"executionArn": arn})
        if isinstance(seen, Failure):
            if seen.code in _MISSING:
                detail = dict(seen.detail, found="no execution under this operation's name")
                return Reply(outcome=o.Found(job_ids=(), request_id=seen.request_id), detail=detail)
            return Reply(outcome=classify(AttemptKind.RECONCILE, seen), detail=seen.detail)
        detail = dict(seen.detail)
        match same_input(seen.body.get("input"), execution_input(op.request.body)):
            case True:
                found = o.Found(job_ids=(arn,), request_id=seen.request_id)
                return Reply(outcome=found, detail=detail)
            case False:
                # Names are unique: another input under our name proves none of ours exists.
                held = "the name is held by an execution with another input"
                detail["found"] = held
                found = o.Found(job_ids=(), request_id=seen.request_id, ruled_out=held)
                return Reply(outcome=found, detail=detail)
        reason = "the execution under this operation's name has no readable input to compare"
        detail["error"] = reason
        return Reply(outcome=o.Rejected(reason=reason), detail=detail)

    async def list_jobs(self, cursor: str | None) -> Listing:
        """One ListExecutions page (providers/aws/listings.py reads it)."""
        params = {"stateMachineArn": self.state_machine_arn, "maxResults": self.list_page}
        return await listed_page(self.calls, "ListExecutions", params, cursor, _execution)

    async def _describe(self, arn: str | None) -> Answer | Failure:
        return await self.calls.invoke("DescribeExecution", {"executionArn": arn or ""})


def factory(settings: Mapping[str, Any]) -> StepFunctionsProvider:
    """The provider for a `[settings]` table: `state_machine_arn` (required), and optionally
    `region`, `endpoint_url` (a local server, say) and `timeout` (of one call). One provider
    file per state machine; each operation stores its settings."""
    aws = AwsSettings.read(settings, frozenset({"state_machine_arn"}))
    arn = text_setting(settings, "state_machine_arn")
    if arn is None:
        raise ProviderConfigError("setting 'state_machine_arn' is required for aws-stepfunctions")
    return StepFunctionsProvider(state_machine_arn=arn, aws=aws)


CHECKED: Factory = factory  # mypy proves the provider follows the CodeProvider contract


def _status(state: Any) -> RemoteStatus:
    known = STATES.get(state) if isinstance(state, str) else None
    return known or RemoteStatus.UNKNOWN


def _execution(item: dict[str, Any]) -> Listed | None:
    """A ListExecutions item: its name is our marker when it has our token's shape."""
    ours = token_marker(item.get("name"))
    return listed(item, arn_key="executionArn", marker=ours, created_key="startDate", states=STATES)


def _why(body: dict[str, Any]) -> dict[str, Any] | None:
    """A finished execution's error and cause, as the provider's error for `explain`."""
    error, cause = body.get("error"), body.get("cause")
    if not error and not cause:
        return None
    if isinstance(cause, str) and len(cause) > CAUSE_LIMIT:
        cause = cause[:CAUSE_LIMIT] + f"… ({len(cause)} characters)"
    return {"code": error, "message": cause}


def _ambiguous(reason: str, answer: Answer) -> o.Ambiguous:
    return o.Ambiguous(reason=reason, http_status=answer.http_status, request_id=answer.request_id)
