"""The keys a provider file may hold, table by table, as records (providers/file/schema.py reads a
file against them). Each field's documentation is the short form of docs/providers.md's."""

# ruff: noqa: RUF009 (`key()` builds an immutable dataclass field with its metadata)

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, ClassVar

from jobtrail.providers.file.schema import (
    DURATION,
    FLAG,
    LIST,
    NUMBER,
    PATHS,
    SIZE,
    TABLE,
    TEXT,
    TEXT_OR_LIST,
    TEXT_OR_TABLE,
    TEXTS,
    WINDOW,
    key,
)
from jobtrail.providers.file.spec import DEFAULT_VISIBILITY, ItemsRule, LookupSpec, WebhookSpec

_FIELD = "a field or parameter name"


@dataclass(frozen=True, kw_only=True)
class AuthKeys:
    REFUSED: ClassVar[dict[str, str]] = dict.fromkeys(
        ("value", "token"),
        'auth must name an environment variable (env = "NAME"), a token command or a '
        "token file, never hold the secret",
    )
    header: str | None = key(TEXT, "the header that carries the credential")
    env: str | None = key(TEXT, "the environment variable holding the credential")
    prefix: str = key(TEXT, 'text put before the credential ("Bearer ")', default="")
    command: Any = key(LIST, "a program and its arguments that prints a token")
    file: str | None = key(TEXT, "a file holding the token")
    lifetime: timedelta | None = key(DURATION, "how long a fetched token lasts")
    timeout: timedelta | None = key(DURATION, "the longest a token command may run")


@dataclass(frozen=True, kw_only=True)
class RequestIdKeys:
    read: tuple[str, ...] | None = key(
        PATHS, "answer headers naming the provider's request id", must="a header or a list of them"
    )
    send: str | None = key(TEXT, "a header carrying a fresh UUID of ours on every call")


@dataclass(frozen=True, kw_only=True)
class RedactKeys:
    headers: tuple[str, ...] = key(TEXTS, "more header names to redact", default=())
    fields: tuple[str, ...] = key(TEXTS, "more JSON field names to redact", default=())


@dataclass(frozen=True, kw_only=True)
class PlacementKeys:
    header: str | None = key(TEXT, "a header")
    field: str | None = key(TEXT, "a body field (dotted)")
    query: str | None = key(TEXT, "a query parameter")
    natural: bool = key(FLAG, "PUT/DELETE on a client-chosen URL: nothing added", default=False)
    format: str = key(TEXT, "text or uuid", default="text", choices=("text", "uuid"))


@dataclass(frozen=True, kw_only=True)
class DeadlineKeys:
    header: str | None = key(TEXT, "a header taking the deadline")
    field: str | None = key(TEXT, "a body field taking the deadline")
    unit: str = key(TEXT, "s, m, h or d", default="s")
    format: str | None = key(TEXT, '"number" or "text"')
    step: int | None = key(NUMBER, "the granularity, in units", must="a whole number of units")
    min: int | None = key(NUMBER, "the least the provider takes", must="a whole number of units")
    max: int | None = key(NUMBER, "the most the provider takes", must="a whole number of units")


@dataclass(frozen=True, kw_only=True)
class CreateKeys:
    method: str = key(TEXT, "the create's HTTP method", default="POST")
    path: str = key(TEXT, "the create endpoint", required=True)
    idempotency: PlacementKeys | None = key(PlacementKeys, "where the token goes")
    client_reference: PlacementKeys | None = key(PlacementKeys, "where the operation id goes")
    job_id: str = key(TEXT, "path of the job id in the answer", default="job_id")
    state: tuple[str, ...] = key(PATHS, "path(s) of the initial state in the answer", default=())
    status_url: str | None = key(TEXT, "path of a status URL in the answer body")
    status_from: Any = key(TEXT_OR_LIST, "ordered places of the status URL")
    identity: Any = key(TEXT_OR_LIST, "ordered places of the job's identity")
    codes: dict[str, Any] | None = key(TABLE, "how each create answer code is read")
    missing: Any = key(TEXT_OR_TABLE, "the state of a body that names none")
    result: str | None = key(TEXT, "path of a synchronous result in the answer")
    deadline: DeadlineKeys | None = key(
        DeadlineKeys,
        "where the provider takes a deadline",
        must='a table such as { header = "Cancel-After" }',
    )


@dataclass(frozen=True, kw_only=True)
class ByHeaderKeys:
    state: tuple[str, ...] | None = key(PATHS, "replaces [status] state")
    codes: dict[str, Any] | None = key(TABLE, "added to [status] codes")
    missing: Any = key(TEXT_OR_TABLE, "replaces [status] missing")
    error: tuple[str, ...] | None = key(PATHS, "replaces [status] error")
    answer_is_result: bool = key(FLAG, "the done answer is the result", default=False)


@dataclass(frozen=True, kw_only=True)
class StatusKeys:
    path: str | None = key(TEXT, "the status URL ({job_id} or {job_url})")
    state: tuple[str, ...] = key(PATHS, "path(s) of the state", default=("state",))
    progress: str | None = key(TEXT, "path of the progress")
    updated_at: str | None = key(TEXT, "path of the provider's timestamp")
    error: tuple[str, ...] = key(PATHS, "where the provider says why", default=("error",))
    usage: dict[str, Any] | None = key(TABLE, "names of work done and billed, by path")
    codes: dict[str, Any] | None = key(TABLE, "how each answer code is read")
    missing: Any = key(TEXT_OR_TABLE, "the state of a body that names none")
    done: str | None = key(TEXT, "a boolean path", must="the dotted path of a boolean")
    cancelled_codes: tuple[Any, ...] = key(
        LIST, "error codes meaning cancelled", default=(), must="a list of error codes"
    )
    ignore_case: bool = key(FLAG, "provider words match case-insensitively", default=False)
    follow: tuple[str, ...] = key(
        PATHS, "headers that move the monitor", default=(), must="a header, or a list of headers"
    )
    cancelled_count: str | None = key(TEXT, "path of a count of cancelled requests")
    by_header: dict[str, ByHeaderKeys] | None = key(
        TABLE, "monitors named by answer headers", each=ByHeaderKeys
    )


@dataclass(frozen=True, kw_only=True)
class CancelKeys:
    method: str = key(TEXT, "the cancel's HTTP method", default="POST")
    path: str | None = key(TEXT, "the cancel endpoint")
    body: Any = key(TABLE, "a table sent as the cancel's JSON body", must="a table, sent as JSON")


@dataclass(frozen=True, kw_only=True)
class ResultKeys:
    path: str | None = key(TEXT, "the result endpoint")
    content_type: str | None = key(TEXT, "the media type the result must have")
    checksum_header: str | None = key(TEXT, "header carrying the sha256 of the body")
    checksum_field: str | None = key(TEXT, "field holding the sha256 of the rest")
    count_header: str | None = key(TEXT, "header stating the number of records")
    max_bytes: int = key(SIZE, "largest result accepted", default=100 * 1000**2)
    schema: Any = key(TABLE, "a JSON Schema the JSON result must satisfy")
    items: ItemsRule | None = key(ItemsRule, "per-item outcomes of a batch")
    expected_items_from_request: str | None = key(TEXT, "path in the request of the count")
    source: str | None = key(
        TEXT, "path (the default) or status", name="from", choices=("path", "status")
    )
    field: Any = key(TEXT, "the part of the answer that is the result")
    link: tuple[str, ...] = key(PATHS, "status field(s) naming the result", default=())
    format: str = key(TEXT, "json or jsonl", default="json", choices=("json", "jsonl"))
    at_create: bool = key(FLAG, "a done create answer is the result", default=False)
    partial: bool = key(FLAG, "a failed job's named result is collected", default=False)
    merge: bool = key(FLAG, "every link fetched and joined", default=False)
    allow_empty: bool = key(FLAG, "a result of nothing is valid", default=False)


@dataclass(frozen=True, kw_only=True)
class ListKeys:
    path: str = key(TEXT, "the listing's path", required=True)
    items: str = key(TEXT, "where the list is in the answer", default="data")
    job_id: str = key(TEXT, "each item's job id", default="job_id")
    match: str | None = key(TEXT, "the item field holding our reference")
    visible_within: Any = key(WINDOW, "how soon a new job shows", default=DEFAULT_VISIBILITY)
    pages: int = key(NUMBER, "the most pages scanned", default=1)
    within: timedelta | None = key(DURATION, "how long the scan may take")
    next: str | None = key(TEXT, "query parameter asking for the next page", must=_FIELD)
    cursor: str | None = key(TEXT, "answer field holding the next page's cursor", must=_FIELD)
    more: str | None = key(TEXT, "boolean field: more pages", must=_FIELD)
    created: str | None = key(TEXT, "each item's creation time", must=_FIELD)
    offset: str | None = key(TEXT, "query parameter taking the items listed so far", must=_FIELD)
    total: str | None = key(TEXT, "answer field: how many items the listing holds", must=_FIELD)


@dataclass(frozen=True, kw_only=True)
class ReconcileKeys:
    same_token: bool = key(FLAG, "a retry with the same token returns the job", default=False)
    list: ListKeys | None = key(ListKeys, "a lookup by client reference")
    lookup: LookupSpec | None = key(
        LookupSpec,
        "a GET of the job by our key",
        must='a table: { path = ".../{idempotency_token}", job_id = ... }',
    )
    token_kept: Any = key(
        TEXT, "how long the provider remembers a token", must='a duration such as "24h"'
    )


@dataclass(frozen=True, kw_only=True)
class CensusKeys:
    list: ListKeys = key(ListKeys, "the listing a census pages through", required=True)
    marker: str = key(
        TEXT,
        "what `match` holds: reference or token",
        default="reference",
        choices=("reference", "token"),
    )
    path_values: dict[str, Any] | None = key(TABLE, "path values read from each listed item")


@dataclass(frozen=True, kw_only=True)
class DeadlinesKeys:
    create: timedelta = key(DURATION, "how long to establish a job", default=timedelta(minutes=2))
    result: timedelta = key(DURATION, "how long to wait for the job", default=timedelta(hours=1))
    cancel: timedelta = key(DURATION, "how long a cancel may take", default=timedelta(minutes=10))


@dataclass(frozen=True, kw_only=True)
class PollKeys:
    initial: timedelta | None = key(DURATION, "first backoff wait")
    cap: timedelta | None = key(DURATION, "longest backoff wait")
    min: timedelta | None = key(DURATION, "the floor of every wait")
    max: timedelta | None = key(DURATION, "the ceiling of every wait")
    not_found_grace: timedelta | None = key(DURATION, "a 404 before any read is not counted")
    max_refused_reads: int | None = key(NUMBER, "refused reads in a row before needs_human")


@dataclass(frozen=True, kw_only=True)
class ProviderKeys:
    """The top level of a provider file."""

    name: str = key(TEXT, "the provider's name", required=True)
    base_url: str = key(TEXT, "origin (and prefix) of the API", required=True)
    base_url_env: str | None = key(TEXT, "a variable that replaces base_url when set")
    path_values: tuple[str, ...] = key(
        TEXTS, "names filled at submit", default=(), must='a list of names: ["task_id"]'
    )
    auth: AuthKeys | None = key(AuthKeys, "where the credential comes from")
    trace_header: str | None = key(TEXT, "header carrying the trace id")
    request_ids: RequestIdKeys = key(RequestIdKeys, "request ids read and sent", default=None)
    timeout: timedelta | None = key(DURATION, "per-call timeout")
    max_response_bytes: int = key(SIZE, "largest JSON answer read", default=1000**2)
    headers: dict[str, Any] = key(TABLE, "static extra headers", default=None)
    cookies: str = key(
        TEXT, "ignore or per-operation", default="ignore", choices=("ignore", "per-operation")
    )
    redact: RedactKeys | None = key(RedactKeys, "more headers and fields to redact")
    create: CreateKeys = key(CreateKeys, "the create call", required=True)
    status: StatusKeys = key(StatusKeys, "the status read", required=True)
    states: dict[str, Any] | None = key(TABLE, "provider words to states")
    cancel: CancelKeys | None = key(CancelKeys, "the cancel call")
    result: ResultKeys | None = key(ResultKeys, "where the result is and how it is checked")
    reconcile: ReconcileKeys | None = key(ReconcileKeys, "how a lost create is found")
    census: CensusKeys | None = key(CensusKeys, "the listing a census reads")
    webhooks: WebhookSpec | None = key(WebhookSpec, "webhook events")
    deadlines: DeadlinesKeys | None = key(DeadlinesKeys, "create, result, cancel")
    poll: PollKeys | None = key(PollKeys, "the schedule of calls")
