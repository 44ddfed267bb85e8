"""Amazon Athena as a code provider: one query execution per operation.

The operation's idempotency token is StartQueryExecution's `ClientRequestToken`: AWS answers
a repeated token with the QueryExecutionId it returned the first time instead of running the
query again, and refuses the token with other parameters. That same-token retry is the only
way back to a query whose create answer was lost: Athena keeps no client reference that can
be searched (GetQueryExecution and ListQueryExecutions do not return the token), so absence
can never be proven. After a lost answer the worker retries with the token; a refused retry
or one that never answers stops for a human (`needs_human`) at the create deadline, never a
fresh query. AWS does not document how long it remembers a token, so a retry long after the
first attempt is weaker evidence than one a minute later.

    create     StartQueryExecution(ClientRequestToken = token)  -> Accepted
    status     GetQueryExecution  -> Observed (QUEUED and RUNNING: running; a failure's
               reason kept for `explain`)
    cancel     StopQueryExecution  -> CancelAcknowledged; `cancelled` comes only from a
               GetQueryExecution that says CANCELLED
    result     GetQueryResults, every page, up to `max_rows`  -> fetched JSON, validated
               by jobtrail
    reconcile  none: Athena has no lookup

The request body is `{"query": "SELECT …", "database": …, "catalog": …, "parameters": […]}`;
only `query` is required, and `database`, `catalog`, `work_group` and `output_location` can
be given once in the provider's settings instead.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from jobtrail.core import outcomes as o
from jobtrail.core.classify import classify
from jobtrail.core.model import (
    AttemptKind,
    Capabilities,
    Idempotency,
    Operation,
    ResultMode,
)
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
from jobtrail.providers.code.contract import Factory
from jobtrail.providers.file.spec import ResultSpec
from jobtrail.providers.protocol import Fetched, Reply

NAME = "aws-athena"
STATES = {
    "QUEUED": RemoteStatus.RUNNING,
    "RUNNING": RemoteStatus.RUNNING,
    "SUCCEEDED": RemoteStatus.SUCCEEDED,
    "FAILED": RemoteStatus.FAILED,
    "CANCELLED": RemoteStatus.CANCELLED,
}
CAPABILITIES = Capabilities(
    idempotency=Idempotency.BODY,  # ClientRequestToken
    same_token_retry=True,
    cancel=True,
    result=ResultMode.ENDPOINT,
)
_BODY_KEYS = frozenset({"query", "database", "catalog", "parameters"})
_SETTINGS = frozenset({"work_group", "output_location", "database", "catalog", "max_rows"})
PAGE = 1000  # GetQueryResults' largest page


class AthenaProvider(AwsProvider):
    """One work group. `call` never raises for anything AWS or the network does."""

    capabilities = CAPABILITIES
    # The rest of the CodeProvider contract (providers/code/contract.py); a provider file's
    # [deadlines] and [poll] override these.
    deadlines: Mapping[str, str | timedelta] = {"create": "5m", "result": "6h", "cancel": "10m"}
    poll: Mapping[str, Any] = {"initial": "1s", "cap": "30s"}
    secret_env = SECRET_ENV
    # the rows are counted and checked against the count the pages added up to
    result = ResultSpec(content_type="application/json", records="rows")

    no_lookup = "Athena offers no lookup by client request token"

    def __init__(
        self,
        *,
        aws: AwsSettings,
        name: str = NAME,
        work_group: str = "primary",
        output_location: str | None = None,
        database: str | None = None,
        catalog: str | None = None,
        max_rows: int = 10_000,
    ) -> None:
        self.name, self.work_group, self.max_rows = name, work_group, max_rows
        self.output_location, self.database, self.catalog = output_location, database, catalog
        self.version = plugin_version()
        self.timeout = aws.call_limit
        self.calls = AwsCalls("athena", aws)

    def describe(self, kind: AttemptKind, op: Operation) -> dict[str, Any]:
        """What is about to be sent: action, endpoint and identifiers, never credentials."""
        what: dict[str, Any] = {"service": "athena", "endpoint": self.calls.where()}
        match kind:
            case AttemptKind.CREATE:
                what |= {"action": "StartQueryExecution", "WorkGroup": self.work_group}
                what["ClientRequestToken"] = op.idempotency_token
            case AttemptKind.CANCEL:
                what |= {"action": "StopQueryExecution", "QueryExecutionId": op.remote_job_id}
            case AttemptKind.RESULT:
                what |= {"action": "GetQueryResults", "QueryExecutionId": op.remote_job_id}
            case AttemptKind.RECONCILE:
                what["unsendable"] = self.no_lookup
            case _:
                what |= {"action": "GetQueryExecution", "QueryExecutionId": op.remote_job_id}
        return what

    # -- calls ---------------------------------------------------------------------------

    def _start_params(self, op: Operation) -> dict[str, Any] | str:
        body = op.request.body
        if not isinstance(body, dict) or not isinstance(body.get("query"), str):
            return 'the request body must be {"query": "…"} (database, catalog, parameters)'
        unknown = sorted(set(body) - _BODY_KEYS)
        if unknown:
            return f"unknown request field {unknown[0]!r}; known: {', '.join(sorted(_BODY_KEYS))}"
        params: dict[str, Any] = {
            "QueryString": body["query"],
            "ClientRequestToken": op.idempotency_token,
            "WorkGroup": self.work_group,
        }
        context = {
            key: value
            for key, value in (
                ("Database", body.get("database", self.database)),
                ("Catalog", body.get("catalog", self.catalog)),
            )
            if value is not None
        }
        if context:
            params["QueryExecutionContext"] = context
        if self.output_location:
            params["ResultConfiguration"] = {"OutputLocation": self.output_location}
        if body.get("parameters") is not None:
            params["ExecutionParameters"] = [str(p) for p in body["parameters"]]
        return params

    async def _start(self, op: Operation) -> Reply:
        params = self._start_params(op)
        if isinstance(params, str):
            reason = f"{params}; nothing was sent"
            return Reply(outcome=o.Rejected(reason=reason), detail={"error": reason, "sent": False})
        started = await self.calls.invoke("StartQueryExecution", params)
        if isinstance(started, Failure):
            return Reply(outcome=classify(AttemptKind.CREATE, started), detail=started.detail)
        job = started.body.get("QueryExecutionId")
        if not isinstance(job, str) or not job:
            reason = "StartQueryExecution answered without a QueryExecutionId"
            ambiguous = o.Ambiguous(reason=reason, http_status=started.http_status)
            return Reply(outcome=ambiguous, detail=dict(started.detail, error=reason))
        accepted = o.Accepted(
            job_id=job,
            remote_state=None,  # the answer says nothing of the query's state
            remote_status=RemoteStatus.UNKNOWN,
            http_status=started.http_status,
            request_id=started.request_id,
        )
        return Reply(outcome=accepted, detail=started.detail)

    async def _status(self, op: Operation) -> Reply:
        seen = await self.calls.invoke(
            "GetQueryExecution", {"QueryExecutionId": op.remote_job_id or ""}
        )
        if isinstance(seen, Failure):
            return Reply(outcome=classify(AttemptKind.STATUS, seen), detail=seen.detail)
        execution = seen.body.get("QueryExecution") or {}
        status = execution.get("Status") or {}
        state = status.get("State")
        remote = STATES.get(state, RemoteStatus.UNKNOWN) if isinstance(state, str) else None
        detail = dict(seen.detail)
        if remote in (RemoteStatus.FAILED, RemoteStatus.CANCELLED):
            why = _why(status)
            if why is not None:
                detail["provider_error"] = why
        completed = status.get("CompletionDateTime")
        observed = o.Observed(
            remote_state=state if isinstance(state, str) else None,
            remote_status=remote or RemoteStatus.UNKNOWN,
            provider_updated_at=str(completed)
            if completed and remote != RemoteStatus.RUNNING
            else None,
            http_status=seen.http_status,
            request_id=seen.request_id,
        )
        return Reply(outcome=observed, detail=detail)

    async def _stop(self, op: Operation) -> Reply:
        return await self._send_stop(
            "StopQueryExecution", {"QueryExecutionId": op.remote_job_id or ""}
        )

    async def _result(self, op: Operation) -> Reply:
        """Every page, as {"columns": [{"name", "type"}], "rows": [[value, …], …]}."""
        params: dict[str, Any] = {"QueryExecutionId": op.remote_job_id or "", "MaxResults": PAGE}
        columns: list[dict[str, Any]] = []
        rows: list[list[Any]] = []
        pages: list[dict[str, Any]] = []
        last: Answer | None = None
        while True:
            page = await self.calls.invoke("GetQueryResults", params)
            if isinstance(page, Failure):
                return _page_failed(page, pages)
            last = page
            pages.append(page.detail)
            result_set = page.body.get("ResultSet") or {}
            if not columns:
                info = (result_set.get("ResultSetMetadata") or {}).get("ColumnInfo") or []
                columns = [{"name": c.get("Name"), "type": c.get("Type")} for c in info]
            found = [_values(row) for row in result_set.get("Rows") or []]
            if len(pages) == 1 and found and found[0] == [c["name"] for c in columns]:
                found = found[1:]  # a SELECT's first row repeats the column labels
            rows.extend(found)
            if len(rows) > self.max_rows:
                # a fetch limit, not a validation (that is jobtrail's): the rows are not
                # collected here, and the query's own output file still holds them all
                where, read = await self._output_location(op)
                reason = (
                    f"the result has more than {self.max_rows} rows (setting max_rows); "
                    f"read it from the query's OutputLocation, {where}"
                )
                missing = o.ResultMissing(reason=reason, http_status=page.http_status)
                detail = {"pages": pages, "output_location_read": read, "error": reason}
                return Reply(outcome=missing, detail=detail)
            token = page.body.get("NextToken")
            if not token:
                break
            params["NextToken"] = token
        document = {"query_execution_id": op.remote_job_id, "columns": columns, "rows": rows}
        fetched = Fetched(
            content=json.dumps(document, ensure_ascii=False).encode("utf-8"),
            content_type="application/json",
            record_count=len(rows),
            http_status=last.http_status,
            request_id=last.request_id,
        )
        return Reply(outcome=None, detail={"pages": pages}, fetched=fetched)

    async def _output_location(self, op: Operation) -> tuple[str, dict[str, Any]]:
        """Where the query wrote its whole result (GetQueryExecution's OutputLocation), and
        the detail of that call (recorded: every request sent is in the attempt)."""
        seen = await self.calls.invoke(
            "GetQueryExecution", {"QueryExecutionId": op.remote_job_id or ""}
        )
        if not isinstance(seen, Failure):
            execution = seen.body.get("QueryExecution") or {}
            location = (execution.get("ResultConfiguration") or {}).get("OutputLocation")
            if isinstance(location, str) and location.startswith("s3://"):
                return location[:1024], seen.detail
        return self.output_location or "in S3 (GetQueryExecution did not name it)", seen.detail


def factory(settings: Mapping[str, Any]) -> AthenaProvider:
    """The provider for a `[settings]` table, all optional: `work_group`,
    `output_location` (s3://…), `database`, `catalog`, `max_rows`, `region`, `endpoint_url`
    (a local server, say) and `timeout`."""
    aws = AwsSettings.read(settings, _SETTINGS)
    max_rows = settings.get("max_rows", 10_000)
    if not isinstance(max_rows, int) or isinstance(max_rows, bool) or max_rows < 1:
        raise ProviderConfigError(f"max_rows must be a positive integer, not {max_rows!r}")
    output = text_setting(settings, "output_location")
    if output is not None and not output.startswith("s3://"):
        raise ProviderConfigError(f"output_location must be an s3:// URL, not {output!r}")
    return AthenaProvider(
        aws=aws,
        work_group=text_setting(settings, "work_group", "primary") or "primary",
        output_location=output,
        database=text_setting(settings, "database"),
        catalog=text_setting(settings, "catalog"),
        max_rows=max_rows,
    )


CHECKED: Factory = factory  # mypy proves the provider follows the CodeProvider contract


def _values(row: Any) -> list[Any]:
    data = row.get("Data") if isinstance(row, dict) else None
    return [cell.get("VarCharValue") for cell in data or [] if isinstance(cell, dict)]


def _why(status: dict[str, Any]) -> dict[str, Any] | None:
    """A failed query's reason, as the provider's error for `explain`."""
    error = status.get("AthenaError") or {}
    reason = status.get("StateChangeReason") or error.get("ErrorMessage")
    code = error.get("ErrorType") or error.get("ErrorCategory")
    if not reason and not code:
        return None
    return {"code": f"AthenaError {code}" if code else None, "message": reason}


def _page_failed(page: Failure, pages: list[dict[str, Any]]) -> Reply:
    detail = dict(page.detail, pages=pages) if pages else page.detail
    return Reply(outcome=classify(AttemptKind.RESULT, page), detail=detail)
