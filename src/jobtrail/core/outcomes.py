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


class Body(StrEnum):
    """The shape of an answer's body, as the provider read it. The core judges what a
    shape can prove (core/evidence.py); a provider only says which one it saw."""

    ABSENT = "absent"  # no body: 0 bytes, or only white space
    NULL = "null"  # JSON null
    EMPTY = "empty"  # an object without members: {}
    OBJECT = "object"  # a JSON object with members
    OTHER = "other"  # JSON that is not an object (a list, a number, a text)
    CUT = "cut"  # JSON cut short
    NOT_JSON = "not_json"  # not JSON at all (or not UTF-8 text)
    UNREAD = "unread"  # not a JSON body: a code provider's SDK answer, read by its own code

    def describe(self) -> str:
        return _BODY_WORDS[self]


_BODY_WORDS = {
    Body.ABSENT: "empty",
    Body.NULL: "JSON null",
    Body.EMPTY: "an empty object ({})",
    Body.OBJECT: "a JSON object",
    Body.OTHER: "JSON that is not an object",
    Body.CUT: "JSON cut short",
    Body.NOT_JSON: "not JSON",
    Body.UNREAD: "read by the provider's code",
}


class Basis(StrEnum):
    """Where the state an answer states came from (see core/evidence.py)."""

    WORD = "word"  # a state word the answer holds (`remote_state`), mapped by the provider
    CODE = "code"  # the answer's HTTP status code, which the provider file declares a state
    FLAG = "flag"  # a done flag the answer holds (Google's `done: true`)
    DEFAULT = "default"  # the state declared for an answer that holds a document but no state
    CONTENT = "content"  # the answer is the result itself (an inline field, a code provider's)
    NONE = "none"  # the answer states no state


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
    # what the answer stated its state with, and its body's shape (core/evidence.py)
    basis: Basis = Basis.WORD
    body: Body = Body.UNREAD


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
    # where the answer says its status is to be asked (as in Accepted), should the core not
    # take the content for the result (core/evidence.py)
    status_url: str | None = None
    status_via: str | None = None
    # what made the answer read as done with this result, and its body's shape: a null
    # result is evidence only of an answer whose code is declared done without a body
    basis: Basis = Basis.CONTENT
    body: Body = Body.UNREAD


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
    # What the answer reports of work done and billed (`[status] usage`, or a code
    # provider's reading), by name: request counts, items, tokens, billed units.
    usage: dict[str, float] | None = None
    # What the answer stated its state with, and its body's shape: the core judges whether
    # that is evidence (core/evidence.py). `unread` is the provider's word for where it
    # looked and found no state ("no state text at `status`").
    basis: Basis = Basis.WORD
    body: Body = Body.UNREAD
    unread: str | None = None


@dataclass(frozen=True, kw_only=True)
class Found:
    """A lookup by client reference: the job ids the provider holds under our reference."""

    word: ClassVar[str] = "found"
    job_ids: tuple[str, ...]
    http_status: int | None = None
    request_id: str | None = None
    ref: str | None = None
    # With no job ids: why the answer rules out a job of ours altogether (not a miss in a
    # listing that may lag): a name held by another job, say. Proof at once, no window.
    ruled_out: str | None = None
    # With no job ids: why the lookup did not cover every job that could be ours (a scan
    # of a listing stopped at its page or time cap before it reached back to the create).
    # Such a miss proves nothing, now or later: a person decides.
    capped: str | None = None
    # When the lookup was asked (its attempt's start, on the ledger's clock): a miss proves
    # absence only if the listing was read after the visibility window had passed, so it
    # is judged at this time, never at the later time its answer was recorded.
    asked_at: datetime | None = None


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
    ACCEPT_AS_IS = "accept_as_is"  # a result that failed validation, taken as it is
    COLLECT_AGAIN = "collect_again"  # a result that failed validation, fetched again

    @property
    def spoken(self) -> str:
        """The word people type and read: `mark-failed`, `accept-as-is`."""
        return self.value.replace("_", "-")


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
