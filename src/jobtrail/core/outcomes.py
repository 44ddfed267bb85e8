"""What can come back from an action. Providers return these; they never raise.

Each kind declares its `word`, the name an attempt's outcome is stored and shown under, so
renaming a class never changes what a ledger holds.

Call outcomes carry `ref`, the id of the attempt that produced them, so every transition can
name its evidence. Local outcomes (deadlines, decisions) are produced without any call.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import ClassVar

from jobtrail.core.model import CancelIntent, Json, ResultSummary
from jobtrail.core.states import RemoteStatus


@dataclass(frozen=True, kw_only=True)
class Accepted:
    """The provider confirmed a remote job id (create, or a same-token retry)."""

    word: ClassVar[str] = "accepted"
    job_id: str
    remote_state: str | None
    remote_status: RemoteStatus
    status_url: str | None = None
    status_via: str | None = None  # the answer header that named status_url, if one did
    http_status: int | None = None
    request_id: str | None = None
    retry_after: str | None = None
    ref: str | None = None


@dataclass(frozen=True, kw_only=True)
class SyncResult:
    """The create call answered with the result itself."""

    word: ClassVar[str] = "sync_result"
    job_id: str | None
    content: bytes
    content_type: str
    location: str | None = None  # where the content was stored, once it was
    http_status: int | None = None
    request_id: str | None = None
    ref: str | None = None


@dataclass(frozen=True, kw_only=True)
class Rejected:
    """A definitive refusal: the provider will not do this (4xx other than 408/409/425/429)."""

    word: ClassVar[str] = "rejected"
    reason: str
    http_status: int | None = None
    request_id: str | None = None
    ref: str | None = None


@dataclass(frozen=True, kw_only=True)
class Ambiguous:
    """We may have been heard, but we do not know what happened."""

    word: ClassVar[str] = "ambiguous"
    reason: str
    http_status: int | None = None
    request_id: str | None = None
    ref: str | None = None
    # The provider answered (2xx, or a code its file declares) but the answer states nothing
    # readable: no body, `{}`, JSON cut short, not JSON. Not a transport failure: the core
    # counts a run of them as a contract breach (see core/refused.py).
    unreadable: bool = False


@dataclass(frozen=True, kw_only=True)
class Throttled:
    """The provider asked us to come back later (429, 503 with Retry-After, 409 in flight),
    or the connection was refused before anything was sent. Nothing was done."""

    word: ClassVar[str] = "throttled"
    reason: str
    retry_after: str | None = None
    http_status: int | None = None
    request_id: str | None = None
    ref: str | None = None


@dataclass(frozen=True, kw_only=True)
class Observed:
    """A status read (or the status part of another answer)."""

    word: ClassVar[str] = "observed"
    remote_state: str | None
    remote_status: RemoteStatus
    progress: Json = None
    provider_updated_at: str | None = None
    retry_after: str | None = None
    http_status: int | None = None
    request_id: str | None = None
    ref: str | None = None
    # A status answer that moves its own monitor (Azure's Location on a 202): later reads
    # go there. Checked against the provider's origin where it is used, like any status URL.
    status_url: str | None = None
    status_via: str | None = None  # the header that named it
    # A done answer that is the result itself (Azure's Location monitor: no later GET):
    # its content, then where the worker stored it; collected like a synchronous result.
    content: bytes | None = None
    location: str | None = None
    # A job that ended failed or cancelled whose answer names a partial result (a batch's
    # finished requests): it is collected before the operation ends in that state.
    partial_result: bool = False


@dataclass(frozen=True, kw_only=True)
class Found:
    """A lookup by client reference: the job ids the provider holds under our reference."""

    word: ClassVar[str] = "found"
    job_ids: tuple[str, ...]
    http_status: int | None = None
    request_id: str | None = None
    ref: str | None = None


@dataclass(frozen=True, kw_only=True)
class CancelAcknowledged:
    word: ClassVar[str] = "cancel_acknowledged"
    http_status: int | None = None
    request_id: str | None = None
    ref: str | None = None


@dataclass(frozen=True, kw_only=True)
class ResultChecked:
    """Result collection finished: fetched and validated (summary.valid says how it went)."""

    word: ClassVar[str] = "result_checked"
    summary: ResultSummary
    ref: str | None = None
    request_id: str | None = None  # the provider's id of the answer the result came in


@dataclass(frozen=True, kw_only=True)
class ResultMissing:
    """The result cannot be fetched: gone (404/410) or refused for good."""

    word: ClassVar[str] = "result_missing"
    reason: str
    http_status: int | None = None
    ref: str | None = None


class Deadline(StrEnum):
    CREATE = "create"
    RESULT = "result"
    CANCEL = "cancel"


@dataclass(frozen=True, kw_only=True)
class DeadlinePassed:
    word: ClassVar[str] = "deadline_passed"
    deadline: Deadline


@dataclass(frozen=True, kw_only=True)
class CancelRequested:
    word: ClassVar[str] = "cancel_requested"
    intent: CancelIntent


@dataclass(frozen=True, kw_only=True)
class Withdrawn:
    """A cancel was asked for while no remote job can exist: nothing will be sent."""

    word: ClassVar[str] = "withdrawn"
    intent: CancelIntent


@dataclass(frozen=True, kw_only=True)
class Interrupted:
    """An attempt's intent was recorded but its outcome never was (the worker died)."""

    word: ClassVar[str] = "interrupted"
    attempt_id: str


@dataclass(frozen=True, kw_only=True)
class NoReconciliation:
    """The create outcome is unknown and the provider offers no way to find out."""

    word: ClassVar[str] = "no_reconciliation"


class Decision(StrEnum):
    ADOPT = "adopt"
    MARK_FAILED = "mark_failed"
    RETRY_AS_NEW = "retry_as_new"
    EXTEND = "extend"  # the result deadline, after result_timed_out
    EXTEND_CANCEL = "extend_cancel"  # the cancel deadline, after cancellation_unconfirmed


@dataclass(frozen=True, kw_only=True)
class HumanDecision:
    word: ClassVar[str] = "human_decision"
    decision: Decision
    actor: str
    reason: str
    job_id: str | None = None
    new_deadline: datetime | None = None
    request_id: str = ""
    # With adopt: a status read of `job_id`, made for this decision. It is the evidence that
    # lets a person adopt a job id the operation never saw (one found by support, say).
    read: Observed | None = None


CallOutcome = (
    Accepted
    | SyncResult
    | Rejected
    | Ambiguous
    | Throttled
    | Observed
    | Found
    | CancelAcknowledged
    | ResultChecked
    | ResultMissing
)
LocalOutcome = (
    DeadlinePassed | CancelRequested | Withdrawn | Interrupted | NoReconciliation | HumanDecision
)
Outcome = CallOutcome | LocalOutcome

# Ledgers written before the words were declared hold the outcome's Python class name. The
# table is written out, not derived from the classes, so a later rename cannot break it.
_CLASS_NAMES = {
    "Accepted": Accepted.word,
    "SyncResult": SyncResult.word,
    "Rejected": Rejected.word,
    "Ambiguous": Ambiguous.word,
    "Throttled": Throttled.word,
    "Observed": Observed.word,
    "Found": Found.word,
    "CancelAcknowledged": CancelAcknowledged.word,
    "ResultChecked": ResultChecked.word,
    "ResultMissing": ResultMissing.word,
    "DeadlinePassed": DeadlinePassed.word,
    "CancelRequested": CancelRequested.word,
    "Withdrawn": Withdrawn.word,
    "Interrupted": Interrupted.word,
    "NoReconciliation": NoReconciliation.word,
    "HumanDecision": HumanDecision.word,
}


def stored_word(value: str | None) -> str | None:
    """The outcome word of a stored attempt, whichever way it was written: a class name
    from an older ledger is read as its word; anything else is kept as it is."""
    if value is None:
        return None
    return _CLASS_NAMES.get(value, value)
