"""What a provider file declares, as records: the parsed form of docs/providers.md."""

# ruff: noqa: RUF009 (`key()` builds an immutable dataclass field with its metadata)

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum
from typing import Any, ClassVar

from jobtrail.core.model import Capabilities, Idempotency, ProviderKind, ResultMode
from jobtrail.core.redact import Redactor
from jobtrail.core.remote_deadline import RemoteDeadline
from jobtrail.core.schedule import Backoff, Bounds, Refusals
from jobtrail.core.states import RemoteStatus
from jobtrail.providers.file.schema import DURATION, LIST, PATHS, TEXT, TEXTS, WINDOW, key
from jobtrail.providers.http.tokens import Auth as Auth
from jobtrail.providers.http.tokens import known_values

# The longest one call may take unless the provider says otherwise (file or code provider).
DEFAULT_TIMEOUT = timedelta(seconds=30)
# How soon a new job is taken to show in a lookup when the provider file does not say
# (`[reconcile] list.visible_within`): long, so that a slow listing cannot turn a miss into
# a second job; a provider that makes jobs visible sooner declares it.
DEFAULT_VISIBILITY = timedelta(minutes=5)


class Cookies(StrEnum):
    """What happens to cookies a provider sets (`cookies` in the provider file)."""

    IGNORE = "ignore"  # never kept, never sent: the default
    PER_OPERATION = "per-operation"  # kept in memory for the operation that received them


@dataclass(frozen=True, kw_only=True)
class Placement:
    """Where a value goes in a request: a header, a (dotted) body field or a query
    parameter. `natural` is the idempotency a PUT or DELETE on a client-chosen resource URL
    has by its nature: nothing is sent, the request itself is the token."""

    header: str | None = None
    field: str | None = None
    query: str | None = None
    natural: bool = False
    uuid: bool = False  # `format = "uuid"`: the value is sent as a UUID derived from it

    def describe(self) -> str:
        if self.natural:
            return "the request itself (PUT/DELETE on a client-chosen URL is idempotent)"
        if self.header:
            where = f"header {self.header}"
        elif self.field:
            where = f"body field {self.field}"
        else:
            where = f"query parameter {self.query}"
        return where + (" (as a UUID derived from it)" if self.uuid else "")


class Reading(StrEnum):
    """How an answer with a given HTTP status code is read (`codes` tables)."""

    BODY = "body"  # read the state from the body
    # done, as the code says (ARM's Location monitor: any 2xx but 202), even with no body;
    # a body that states a failure or a cancellation says how it ended
    DONE = "done"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    # a create refused because a job already exists under our key (Airflow's 409 for a
    # dag_run_id in use): the job is looked up, never created again
    EXISTS = "exists"


class SourceKind(StrEnum):
    FIELD = "field"  # a dotted path in the JSON body
    NAME = "name"  # a body field holding a resource name: segments joined by "/"
    HEADER = "header"  # a URL in a response header
    REQUEST = "request"  # the URL the create was sent to (the resource's own URL)
    STATUS_URL = "status_url"  # the status URL chosen from `status_from` (identity only)


@dataclass(frozen=True, kw_only=True)
class Source:
    """One place a create answer may name the job or its status URL: `field:PATH`,
    `name:PATH`, `header:NAME`, `request` or `status_url`."""

    kind: SourceKind
    name: str = ""

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}" if self.name else self.kind.value


@dataclass(frozen=True, kw_only=True)
class StateRule:
    """How the remote state is read out of an answer (docs/providers.md, "Reading state")."""

    paths: tuple[str, ...] = ()  # tried in order; the first holding text wins
    codes: Mapping[int, Reading] = field(default_factory=dict)
    missing: RemoteStatus | None = None  # the state when no path holds one
    # the same by the answer's status code, where it differs by code (ARM: a 201 with no
    # provisioningState is still running, a 200 with none has succeeded); wins over `missing`
    missing_by_code: Mapping[int, RemoteStatus] = field(default_factory=dict)
    done: str | None = None  # a boolean path (Google's `done`): true ends the job
    error: tuple[str, ...] = ("error",)  # where the provider says why it failed
    cancelled_codes: tuple[str, ...] = ()  # error codes that mean cancelled (Google: 1)
    ignore_case: bool = False
    follow: tuple[str, ...] = ()  # headers of a status answer that move the status monitor
    # a count of requests the provider cancelled: a job that ended "succeeded" with it above
    # zero ended cancelled (Anthropic's request_counts.canceled after a cancel)
    cancelled_count: str | None = None
    # [status.by_header] answer_is_result: this monitor's done answer with a body is the
    # result itself, kept as it is read (Azure's Location monitor; a monitor that keeps its
    # progress in a cookie may answer differently when asked again)
    answer_is_result: bool = False


@dataclass(frozen=True, kw_only=True)
class ItemsRule:
    """How to read per-item outcomes out of a batch result (`[result] items`)."""

    path: str | None = key(TEXT, "JSON results: where the item list is")
    status: str = key(TEXT, "CSV column or JSON field with the item's outcome", default="status")
    ref: tuple[str, ...] = key(
        PATHS, "columns or fields naming the item, first found wins", default=("id",)
    )
    success: tuple[str, ...] = key(
        TEXTS, "words for success", default=("succeeded", "success", "ok")
    )


@dataclass(frozen=True, kw_only=True)
class ResultSpec:
    path: str | None = None
    content_type: str | None = None
    checksum_header: str | None = None
    checksum_field: str | None = None
    count_header: str | None = None
    max_bytes: int = 100 * 1000**2
    schema: Any = None
    items: ItemsRule | None = None
    expected_items_from_request: str | None = None
    inline_field: str | None = None
    source: str = "path"  # "path" or "status" (the final status answer)
    field: str | None = None  # the part of the status or create answer that is the result
    at_create: bool = False  # a create answer saying "done", with a body, is the result
    link: tuple[str, ...] = ()  # status fields naming the result: a URL, or {link} in `path`
    jsonl: bool = False  # JSON Lines: one record (item) per line
    partial: bool = False  # a failed or cancelled job whose answer names a result has it collected
    merge: bool = False  # every `link` present is fetched; their JSON Lines make one result
    allow_empty: bool = False  # a result of nothing (no bytes, JSON null) may be valid
    # a JSON result's list of records (dotted path), counted and checked against the count
    # the provider states, when no `items` rule says where the items are
    records: str | None = None


@dataclass(frozen=True, kw_only=True)
class ListSpec:
    path: str
    items: str = "data"
    job_id: str = "job_id"
    match: str | None = None  # keep only items whose field here holds our client reference
    # How soon a new job shows in this lookup: a miss proves no job exists only that long
    # after the create was last sent. None ("never"): a miss proves nothing, ever.
    visible_within: timedelta | None = DEFAULT_VISIBILITY
    # A listing matched on our side (`match`) is scanned, newest first: at most `pages`
    # pages within `within`, asking for the next with the query parameter `next` set to the
    # answer's `cursor` field, while `more` (if named) is true. `created`: each item's
    # creation time, which tells when the scan has reached jobs older than the create.
    pages: int = 1
    within: timedelta = DEFAULT_TIMEOUT
    next: str | None = None
    cursor: str | None = None
    more: str | None = None
    created: str | None = None
    # Or paged by position: `offset` names the query parameter taking how many items the
    # pages before held, and `total` the answer's count of every item it lists.
    offset: str | None = None
    total: str | None = None


@dataclass(frozen=True, kw_only=True)
class CensusSpec:
    """`[census]`: a listing of every job, paged as a scan is, read by the census only."""

    listing: ListSpec
    token: bool  # the marker at `match` is our idempotency token (else the operation id)
    path_values: Mapping[str, str]  # a path value's name -> the item field holding it

    def sees(self) -> str:
        """What this listing shows, in the words `provider check` and `census` say."""
        listing, marker = self.listing, "idempotency token" if self.token else "operation id"
        return (
            f"every job of its census listing (`[census] list`, {listing.path.split('?')[0]}), "
            f"at most {listing.pages} page(s) of the newest within "
            f"{listing.within.total_seconds():g}s, our marker (the {marker} at "
            f"`{listing.match}`) read on each"
        )


@dataclass(frozen=True, kw_only=True)
class LookupSpec:
    """`[reconcile] lookup`: a GET of the job by a key of ours in its path (Airflow's DAG run
    whose id is our idempotency token). 2xx names the job; a code in `absent` proves none."""

    path: str = key(TEXT, "GET of the job by our key", required=True)
    job_id: str = key(TEXT, "where a 2xx answer names the job", default="job_id")
    absent: tuple[int, ...] = key(LIST, "codes that prove no job exists", default=(404,))
    # as for a list: a miss proves no job exists only this long after the create was sent
    visible_within: timedelta | None = key(
        WINDOW, "how soon a new job shows", default=DEFAULT_VISIBILITY
    )


@dataclass(frozen=True, kw_only=True)
class WebhookSpec:
    """The [webhooks] table: how events are verified, and where they name the job."""

    signing: str = key(TEXT, "standard or hmac", default="standard", choices=("standard", "hmac"))
    secret_env: str = key(TEXT, "the variable holding the signing secret", required=True)
    job_id: str = key(TEXT, "path of the job id in the event", default="data.job_id")
    state: str = key(TEXT, "path of the state in the event", default="data.state")
    # default: `updated_at` beside the state
    updated_at: str | None = key(TEXT, "path of the event's timestamp")
    event_id: str = key(TEXT, "path of the event id", default="id")
    tolerance: timedelta = key(DURATION, "how old a timestamp may be", default=timedelta(minutes=5))
    signature_header: str = key(TEXT, "hmac: the signature header", default="X-Webhook-Signature")
    id_header: str = key(TEXT, "hmac: the event id header", default="X-Webhook-Id")
    timestamp_header: str = key(TEXT, "hmac: the timestamp header", default="X-Webhook-Timestamp")


@dataclass(frozen=True, kw_only=True)
class PollRules:
    """The [poll] table: backoff without hints, the floor and ceiling of every wait, and
    what refused status reads lead to (see docs/providers.md)."""

    backoff: Backoff = field(default_factory=Backoff)
    bounds: Bounds = field(default_factory=Bounds)
    refusals: Refusals = field(default_factory=Refusals)


@dataclass(frozen=True, kw_only=True)
class ProviderSpec:
    kind: ClassVar[ProviderKind] = ProviderKind.HTTP
    version: ClassVar[str | None] = None  # a provider file has none; a code provider does

    name: str
    base_url: str
    document: dict[str, Any]  # the file's content, secret-free, stored with each operation
    auth: Auth | None = None
    trace_header: str | None = None
    # answer headers naming the provider's request id, tried in order ([request_ids] read)
    request_id_headers: tuple[str, ...] = ("X-Request-ID", "Request-Id")
    # a header carrying a fresh UUID of ours on every call ([request_ids] send)
    client_request_id_header: str | None = None
    timeout: timedelta = DEFAULT_TIMEOUT
    max_response_bytes: int = 1000**2
    headers: dict[str, str] = field(default_factory=dict)
    cookies: Cookies = Cookies.IGNORE
    create_method: str = "POST"
    create_path: str = "/"
    idempotency: Placement | None = None
    client_reference: Placement | None = None
    create_job_id: str = "job_id"
    status_path: str | None = None
    status_progress: str | None = "progress"
    status_updated_at: str | None = "updated_at"
    identity: tuple[Source, ...] = (Source(kind=SourceKind.FIELD, name="job_id"),)
    status_from: tuple[Source, ...] = (
        Source(kind=SourceKind.HEADER, name="Operation-Location"),
        Source(kind=SourceKind.HEADER, name="Location"),
        Source(kind=SourceKind.FIELD, name="status_url"),
    )
    create_rule: StateRule = field(default_factory=lambda: StateRule(paths=("state",)))
    status_rule: StateRule = field(default_factory=lambda: StateRule(paths=("state",)))
    # [status.by_header]: the rule for a monitor a given answer header named, by its
    # lowercased name (Azure's `Location` monitor is done at any 200, its body the result)
    status_by_header: Mapping[str, StateRule] = field(default_factory=dict)
    states: dict[str, RemoteStatus] = field(default_factory=dict)
    cancel_method: str = "POST"
    cancel_path: str | None = None
    cancel_body: Any = None  # `[cancel] body`: the JSON sent with the cancel, if any
    result: ResultSpec = field(default_factory=ResultSpec)
    same_token: bool = False
    listing: ListSpec | None = None
    lookup: LookupSpec | None = None
    census: CensusSpec | None = None
    webhooks: WebhookSpec | None = None
    deadlines: dict[str, timedelta] = field(default_factory=dict)
    poll: PollRules = field(default_factory=lambda: PollRules())
    # what the API promises beyond its calls (providers/file/declared.py)
    remote_deadline: RemoteDeadline | None = None  # [create] deadline
    usage: Mapping[str, str] = field(default_factory=dict)  # [status] usage: name -> path
    token_kept: timedelta | None = None  # [reconcile] token_kept
    redactor: Redactor = field(default_factory=Redactor)

    # the create path's placeholders a submitter fills ({group}, {name}): pathvalues.py
    create_placeholders: tuple[str, ...] = ()

    @property
    def target(self) -> str:
        """What the fingerprint binds a token to: this provider's create endpoint, base URL
        included, so the same body sent elsewhere (another ARM resource, another region's
        endpoint) is another request, never folded into the first one's operation."""
        return f"{self.name}:{self.create_method} {self.base_url}{self.create_path}"

    def target_with(self, path: Mapping[str, str]) -> str:
        """The target with the submitted path values in place (they are fingerprinted too)."""
        filled = self.create_path
        for name, value in path.items():
            filled = filled.replace(f"{{{name}}}", value)
        return f"{self.name}:{self.create_method} {self.base_url}{filled}"

    @property
    def capabilities(self) -> Capabilities:
        idem = _idempotency(self.idempotency)
        if self.result.path or self.result.link or self.result.source == "status":
            mode = ResultMode.ENDPOINT
        elif self.result.inline_field or self.result.at_create:
            mode = ResultMode.INLINE
        else:
            mode = ResultMode.NONE
        scanned = self.listing if self.listing and self.listing.match else None
        return Capabilities(
            idempotency=idem,
            same_token_retry=self.same_token,
            list_by_reference=self.listing is not None,
            status_by_client_id=self.lookup is not None,
            cancel=self.cancel_path is not None,
            result=mode,
            webhooks=self.webhooks is not None,
            empty_result=self.result.allow_empty,
            absent_after=_seconds(found.visible_within)
            if (found := self.listing or self.lookup)
            else None,
            token_kept_for=_seconds(self.token_kept),
            scan_pages=scanned.pages if scanned else None,
            scan_seconds=_seconds(scanned.within) if scanned else None,
            remote_deadline=self.remote_deadline is not None,
        )

    def status_rule_for(self, via: str | None) -> StateRule:
        """How a status answer is read, given the answer header that named its URL."""
        return self.status_by_header.get((via or "").lower(), self.status_rule)

    def secret_values(self) -> list[str]:
        """The secrets this provider uses, read now from the environment (for redaction)."""
        values = []
        if self.auth and self.auth.env and os.environ.get(self.auth.env):
            values.append(os.environ[self.auth.env])
        values.extend(known_values(self.auth))  # tokens fetched by a command or from a file
        if self.webhooks and os.environ.get(self.webhooks.secret_env):
            values.append(os.environ[self.webhooks.secret_env])
        return values


def _seconds(window: timedelta | None) -> float | None:
    return None if window is None else window.total_seconds()


def _idempotency(placement: Placement | None) -> Idempotency:
    if placement is None:
        return Idempotency.NONE
    if placement.natural:
        return Idempotency.NATURAL
    if placement.header:
        return Idempotency.HEADER
    return Idempotency.BODY if placement.field else Idempotency.QUERY
