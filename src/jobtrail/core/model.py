"""Records of the ledger. Frozen, keyword-only; changed with dataclasses.replace."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, TypeVar

from jobtrail.core.states import Evidence, RemoteStatus, State

Json = Any  # a value that json.dumps accepts
R = TypeVar("R")


_FIELDS: dict[type[Any], frozenset[str]] = {}


def _field_names(cls: type[Any]) -> frozenset[str]:
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = frozenset(f.name for f in fields(cls))
    return names


def evolve(record: R, **changes: Any) -> R:
    """`dataclasses.replace` for the records of this package, without running `__init__`
    again: applying one outcome makes dozens of these, and replace costs about eight times more. The
    records hold no derived state, so copying the fields is all a replace does for them."""
    kind: type[Any] = type(record)
    unknown = changes.keys() - _field_names(kind)
    if unknown:
        raise TypeError(f"{kind.__name__} has no field {sorted(unknown)[0]!r}")
    new: R = object.__new__(kind)
    new.__dict__.update(record.__dict__, **changes)
    return new


class Idempotency(StrEnum):
    HEADER = "header"
    BODY = "body"
    QUERY = "query"
    NATURAL = "natural"  # a PUT or DELETE on a client-chosen resource URL
    NONE = "none"


class ProviderKind(StrEnum):
    """What drives an operation: the generic HTTP provider built from its provider file, or a
    code provider (a plug-in, see providers/code/contract.py) that only a worker having it may
    drive."""

    HTTP = "http"
    CODE = "code"


class ResultMode(StrEnum):
    ENDPOINT = "endpoint"
    INLINE = "inline"
    NONE = "none"


class Tier(StrEnum):
    """How far a lost create answer can be resolved (DESIGN: what each provider declares),
    best first. `provider check` names it (core/proof.py); `explain` says which resolved."""

    TOKEN = "token"  # the provider's own token: a same-token retry, or a lookup by it
    FILTER = "filter"  # a listing the provider filters on our reference
    SCAN = "scan"  # a bounded scan of a listing, matched on our side
    NONE = "none"  # in doubt: a person decides, nothing is sent again on its own


@dataclass(frozen=True, kw_only=True)
class Capabilities:
    """What a provider promises, as declared in its provider file."""

    idempotency: Idempotency = Idempotency.NONE
    same_token_retry: bool = False
    list_by_reference: bool = False
    status_by_client_id: bool = False
    cancel: bool = False
    result: ResultMode = ResultMode.NONE
    webhooks: bool = False
    # A result of nothing (no bytes, JSON null) is a valid result (an action done with no
    # content); otherwise it never is (core/evidence.py).
    empty_result: bool = False
    # Seconds after a create was last sent past which a lookup that finds nothing proves no
    # job exists: the provider's window for making a new job visible to its lookup. None:
    # a miss never proves absence; jobtrail keeps looking until the create deadline, then
    # a person decides.
    absent_after: float | None = None
    # How long the provider remembers a create token, in seconds (`[reconcile]
    # token_kept`): a same-token retry proves nothing after that. None: it documents no
    # limit, and the create deadline alone bounds the retries.
    token_kept_for: float | None = None
    # The lookup scans a listing matched on our side (no server-side filter): at most this
    # many pages within this many seconds. None: the provider filters the listing.
    scan_pages: int | None = None
    scan_seconds: float | None = None
    # The provider takes a deadline of its own, which jobtrail writes at submit from the
    # result deadline (core/remote_deadline.py): remote work then stops by itself.
    remote_deadline: bool = False

    @property
    def tier(self) -> Tier:
        """The best way this provider offers to resolve a lost create answer."""
        if self.same_token_retry or self.status_by_client_id:
            return Tier.TOKEN
        if self.list_by_reference:
            return Tier.SCAN if self.scan_pages is not None else Tier.FILTER
        return Tier.NONE

    @property
    def lookup_tier(self) -> Tier:
        """The tier a lookup call (`reconcile`) of this provider uses, which may not be its
        best tier (a same-token retry, then a filtered listing): a GET by our key is the
        token tier, a listing the filter or the scan tier."""
        if self.status_by_client_id:
            return Tier.TOKEN
        if self.list_by_reference:
            return Tier.SCAN if self.scan_pages is not None else Tier.FILTER
        return Tier.NONE

    @property
    def can_reconcile(self) -> bool:
        return self.same_token_retry or self.list_by_reference or self.status_by_client_id

    @property
    def lookup(self) -> bool:
        """A declared way to ask the provider which job (if any) holds our reference: the
        only answer that can prove a lost create made nothing."""
        return self.list_by_reference or self.status_by_client_id

    @property
    def at_most_once_provable(self) -> bool:
        """True when a lost create answer can be resolved without risking a second job."""
        return self.can_reconcile


@dataclass(frozen=True, kw_only=True)
class JobRequest:
    """What we ask the provider to do. `target` names the provider and the create path."""

    method: str
    target: str
    body: Json
    headers: dict[str, str] = field(default_factory=dict)
    # values of the create path's placeholders, given at submit ({group}, {name})
    path: dict[str, str] = field(default_factory=dict)
    # The deadline written into the request for the provider (seconds, as sent), None when
    # the provider takes none or none it accepts fits the result deadline.
    remote_deadline: float | None = None


@dataclass(frozen=True, kw_only=True)
class CancelIntent:
    actor: str
    reason: str
    expected_effect: str
    requested_at: datetime
    request_id: str


@dataclass(frozen=True, kw_only=True)
class ItemCounts:
    """Per-item outcomes of a batch result."""

    total: int
    succeeded: int
    failed: int
    failed_refs: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class ResultSummary:
    """What result collection found: where the content is and what was checked."""

    valid: bool
    content_type: str | None = None
    sha256: str | None = None
    size: int | None = None
    location: str | None = None
    records: int | None = None
    items: ItemCounts | None = None
    checks: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    # What a job that ended failed or cancelled had finished: collected and validated like
    # any result, but never a success (the operation ends as the remote job did).
    partial: bool = False


@dataclass(frozen=True, kw_only=True)
class Operation:
    # Written once, before any call.
    operation_id: str
    key: str
    provider: str
    provider_config: Json
    provider_kind: ProviderKind = ProviderKind.HTTP
    provider_version: str | None = None  # a code provider's version when it was submitted
    capabilities: Capabilities
    request: JobRequest
    fingerprint: str
    idempotency_token: str
    trace_id: str
    actor: str
    authorized_by: str | None
    reason: str | None
    created_at: datetime
    create_deadline: datetime
    cancel_timeout: timedelta
    # Changes as the operation moves.
    result_deadline: datetime
    state: State = State.CREATE_PENDING
    remote_job_id: str | None = None
    remote_state: str | None = None
    remote_status: RemoteStatus | None = None
    progress: Json = None
    # What the provider reports of work done and billed (request counts, tokens, billed
    # units), by name, as last read: the final observation's on an ended operation.
    usage: dict[str, float] | None = None
    status_url: str | None = None
    # The answer header that named status_url (`Location`, `Azure-AsyncOperation`), None
    # when a body field, the create URL or the provider file did: monitors named by
    # different headers answer differently (Azure: a `Location` 200 is done, whatever its
    # body; an `Azure-AsyncOperation` 200 says its state in `status`).
    status_via: str | None = None
    candidate_job_id: str | None = None
    conflicting_job_ids: tuple[str, ...] = ()
    next_poll_at: datetime | None = None
    poll_count: int = 0
    create_attempts: int = 0
    # When the outcome of the last create call that may have reached the provider was
    # recorded: a lookup miss proves nothing until the provider's visibility window
    # (`Capabilities.absent_after`) has passed since then.
    create_sent_at: datetime | None = None
    inflight_attempt: str | None = None
    # Status reads refused in a row (4xx other than 408/425/429) and when the run began;
    # a readable status answer resets both.
    refused_reads: int = 0
    refused_since: datetime | None = None
    cancel_intent: CancelIntent | None = None
    cancel_deadline: datetime | None = None
    cancel_sent: bool = False
    inline_result: str | None = None  # where a synchronous result waits for validation
    result: ResultSummary | None = None
    fence: int = 0
    lease_owner: str | None = None
    lease_expires_at: datetime | None = None
    version: int = 0
    updated_at: datetime | None = None


@dataclass(frozen=True, kw_only=True)
class Transition:
    operation_id: str
    at: datetime
    actor: str
    from_state: State
    to_state: State
    evidence: Evidence
    cause: str
    remote_job_id: str | None
    seq: int | None = None


class AttemptKind(StrEnum):
    CREATE = "create"
    STATUS = "status"
    CANCEL = "cancel"
    RESULT = "result"
    RECONCILE = "reconcile"

    @property
    def safe(self) -> bool:
        """A read without side effect (status, result GET): it needs no durable intent
        before the call, only its outcome after (DESIGN, vocabulary: attempt)."""
        return self in (AttemptKind.STATUS, AttemptKind.RESULT)


@dataclass(frozen=True, kw_only=True)
class Attempt:
    """One external call. A call with an effect has its intent stored before the call and
    its outcome after; a safe read is stored once, with its outcome, and not at all when
    its observation folds into an open observation run."""

    attempt_id: str
    operation_id: str
    kind: AttemptKind
    fence: int
    actor: str
    started_at: datetime
    request: Json  # sanitized: method, url, headers with credentials redacted
    finished_at: datetime | None = None
    outcome: str | None = None
    http_status: int | None = None
    provider_request_id: str | None = None
    detail: Json = None  # sanitized response metadata


@dataclass(frozen=True, kw_only=True)
class Observation:
    """A fact read from the provider: nothing here is inferred."""

    operation_id: str
    source: str  # "create", "status", "cancel", "reconcile" or "webhook"
    observed_at: datetime
    remote_state: str | None
    remote_status: RemoteStatus
    provider_updated_at: str | None = None
    progress: Json = None
    ref: str | None = None  # the attempt id or webhook event id carrying the raw response
    event_id: str | None = None
    # A status observation is a run: consecutive reads of the same remote state fold into it.
    # The fields above are its first read; these follow its last (see docs/states.md).
    request_id: str | None = None  # the provider's request id of the run's last read
    last_seen_at: datetime | None = None  # None: seen once, at observed_at
    seen_count: int = 1
    last_progress: Json = None
    closed_at: datetime | None = None  # None: the run is open (only a status run can be)
    usage: dict[str, float] | None = None  # work done and billed, kept on a terminal read

    @property
    def seen_last(self) -> datetime:
        return self.last_seen_at or self.observed_at
