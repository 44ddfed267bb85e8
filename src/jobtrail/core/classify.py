"""What a call that did not go right is: one rule for every provider (provider files, AWS,
code providers). Providers only reduce what happened to facts (`Failed`): was the request
sent and answered (`Sent`), the HTTP status, AWS's error code, the Retry-After, a reason.

- not sent (no connection, no credential), or "later" (HTTP 429, 503 with a Retry-After, a
  code of `LATER`; 409 to a create, in flight under our key, or to a result, not ready yet)
  -> Throttled: nothing was done, come back;
- sent and unanswered, unreadable, 5xx, 408 or 425 -> Ambiguous: we may have been heard (to
  a status read, an unreadable answer is one that states nothing: Observed, judged by
  core/evidence.py);
- anything else -> Rejected (to a result fetch: ResultMissing); "no such job" by code
  (`NOT_FOUND`) to a status read is a 404, for the grace of core/refused.py.

An answer that names its error by code (AWS) is judged by that code, and by its status only
for 5xx; an HTTP answer by its status.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from jobtrail.core import outcomes as o
from jobtrail.core.model import AttemptKind
from jobtrail.core.outcomes import Basis, Body
from jobtrail.core.states import RemoteStatus

# Error codes by which AWS says "not now, nothing was done" (ExecutionLimitExceeded: too many
# open Step Functions executions, none started).
LATER = frozenset(
    {"ThrottlingException", "Throttling", "TooManyRequestsException", "RequestLimitExceeded"}
    | {"ExecutionLimitExceeded", "ServiceQuotaExceededException"}
)
# Error codes by which AWS says "no such job" to a status read.
NOT_FOUND = frozenset({"ExecutionDoesNotExist", "ResourceNotFoundException"})


class Sent(StrEnum):
    """Whether the request left, and whether an answer came back that could be read."""

    NO = "not sent"
    INVALID = "not sent: the request is invalid"
    NO_ANSWER = "sent, no answer"
    ANSWERED = "sent, answered with an error"
    UNREADABLE = "sent, answered with something that could not be read"


@dataclass(frozen=True, kw_only=True)
class Failed:
    """The neutral facts of a call that did not go right, as a provider saw them."""

    reason: str
    sent: Sent = Sent.ANSWERED
    http_status: int | None = None
    code: str | None = None
    retry_after: str | None = None
    request_id: str | None = None


Classified = o.Throttled | o.Ambiguous | o.Rejected | o.ResultMissing | o.Observed


def classify(call: AttemptKind, f: Failed) -> Classified:
    """The outcome of `call` that ended as `f` says (the module's docstring gives the rule)."""
    status, by_status = f.http_status or 0, f.code is None
    later = (
        status == 429
        or (status == 503 and f.retry_after is not None)
        or (status == 409 and call in (AttemptKind.CREATE, AttemptKind.RESULT))
    )
    if f.sent is Sent.NO or f.code in LATER or (by_status and later):
        return o.Throttled(
            reason=f.reason,
            retry_after=f.retry_after,
            http_status=f.http_status,
            request_id=f.request_id,
        )
    if call is AttemptKind.STATUS and f.sent is Sent.UNREADABLE:
        return o.Observed(
            remote_state=None,
            remote_status=RemoteStatus.UNKNOWN,
            http_status=f.http_status,
            request_id=f.request_id,
            basis=Basis.NONE,
            body=Body.NOT_JSON,
            unread=f.reason,
        )
    unanswered = f.sent in (Sent.NO_ANSWER, Sent.UNREADABLE)
    if unanswered or status >= 500 or (by_status and status in (408, 425)):
        return o.Ambiguous(reason=f.reason, http_status=f.http_status, request_id=f.request_id)
    if call is AttemptKind.RESULT:
        return o.ResultMissing(reason=f.reason, http_status=f.http_status)
    found = 404 if call is AttemptKind.STATUS and f.code in NOT_FOUND else f.http_status
    return o.Rejected(reason=f.reason, http_status=found, request_id=f.request_id)


def cancelled_by_count(status: RemoteStatus, count: Any) -> RemoteStatus:
    """A job that succeeded with some of its requests cancelled (`count`, read at the
    provider file's `cancelled_count`, a number above zero) ended cancelled."""
    counted = isinstance(count, int | float) and not isinstance(count, bool) and count > 0
    return RemoteStatus.CANCELLED if status is RemoteStatus.SUCCEEDED and counted else status
