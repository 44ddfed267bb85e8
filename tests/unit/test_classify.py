"""One classifier for every provider (core/classify.py): an HTTP answer and an AWS error that
say the same thing become the same outcome, whatever call they answer."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from jobtrail.core import outcomes as o
from jobtrail.core.classify import Failed, Sent, cancelled_by_count, classify
from jobtrail.core.model import AttemptKind
from jobtrail.core.outcomes import Basis
from jobtrail.core.states import RemoteStatus
from jobtrail.providers.aws import calls
from jobtrail.providers.http import parse

K = AttemptKind
ANY_CALL = [K.CREATE, K.STATUS, K.CANCEL, K.RESULT, K.RECONCILE]


def http(kind: AttemptKind, status: int, **headers: str) -> o.CallOutcome:
    """An HTTP answer as the provider file's reader reduces it (providers/http/parse.py)."""
    body = b'{"error": {"message": "said by the provider"}}'
    return parse.error_outcome(kind, status, headers, body, "req_1")


def aws(kind: AttemptKind, code: str, status: int) -> o.CallOutcome:
    """An AWS error answer as botocore raises it, reduced by providers/aws/calls.py."""
    response: Any = {
        "Error": {"Code": code, "Message": "said by the provider"},
        "ResponseMetadata": {"HTTPStatusCode": status, "RequestId": "req_1"},
    }
    failure = calls._answered("Describe", ClientError(response, "Describe"), 1.0)
    return classify(kind, failure)


SAME = [
    # situation, HTTP answer, AWS answer, outcome for every call but a result fetch, and for it
    ("later", (429, {"Retry-After": "7"}), ("ThrottlingException", 400), o.Throttled, o.Throttled),
    ("later", (429, {}), ("TooManyRequestsException", 429), o.Throttled, o.Throttled),
    ("unknown", (500, {}), ("InternalServerException", 500), o.Ambiguous, o.Ambiguous),
    ("unknown", (503, {}), ("ServiceUnavailable", 503), o.Ambiguous, o.Ambiguous),
    ("refused", (400, {}), ("ValidationException", 400), o.Rejected, o.ResultMissing),
    ("refused", (403, {}), ("AccessDeniedException", 403), o.Rejected, o.ResultMissing),
]


@pytest.mark.parametrize("kind", ANY_CALL)
@pytest.mark.parametrize(("what", "answer", "error", "outcome", "result"), SAME)
def test_an_http_answer_and_an_aws_error_that_say_the_same_are_classified_alike(
    kind: AttemptKind,
    what: str,
    answer: tuple[int, dict[str, str]],
    error: tuple[str, int],
    outcome: type,
    result: type,
) -> None:
    """Throttled, unknown and refused read the same from an HTTP status and an AWS code."""
    expected = result if kind is K.RESULT else outcome
    from_http, from_aws = http(kind, answer[0], **answer[1]), aws(kind, *error)
    assert type(from_http) is type(from_aws) is expected, (what, from_http, from_aws)
    assert from_http.http_status == answer[0] and from_aws.http_status == error[1]


@pytest.mark.parametrize("kind", ANY_CALL)
def test_nothing_sent_and_no_answer_are_the_same_from_any_transport(kind: AttemptKind) -> None:
    """A connection never opened is "later"; a request sent and never answered is unknown."""
    assert isinstance(classify(kind, Failed(reason="refused", sent=Sent.NO)), o.Throttled)
    assert isinstance(classify(kind, Failed(reason="timeout", sent=Sent.NO_ANSWER)), o.Ambiguous)


def test_no_such_job_on_a_status_read_is_a_404_from_both() -> None:
    """AWS's "no such job" codes are read as HTTP's 404, so both get the visibility grace."""
    from_http = http(K.STATUS, 404)
    for code in ("ResourceNotFoundException", "ExecutionDoesNotExist"):
        from_aws = aws(K.STATUS, code, 400)
        assert isinstance(from_aws, o.Rejected) and from_aws.http_status == 404
        assert from_aws.request_id == "req_1"
    assert isinstance(from_http, o.Rejected) and from_http.http_status == 404
    assert aws(K.CANCEL, "ResourceNotFoundException", 400).http_status == 400


def test_the_retry_after_of_a_throttled_answer_is_kept() -> None:
    """The provider's Retry-After travels with the outcome, for the schedule's floor: a
    result fetch answered 409 (not ready yet) keeps it, as a 429 does."""
    out = http(K.STATUS, 429, **{"Retry-After": "7"})
    assert isinstance(out, o.Throttled) and out.retry_after == "7" and out.request_id == "req_1"
    assert "said by the provider" in out.reason
    later = http(K.RESULT, 409, **{"Retry-After": "7"})
    assert isinstance(later, o.Throttled) and later.retry_after == "7"


@pytest.mark.parametrize(
    ("status", "headers", "outcomes"),
    [
        (503, {"Retry-After": "3"}, {K.CREATE: o.Throttled, K.STATUS: o.Throttled}),
        (408, {}, {K.CREATE: o.Ambiguous, K.RESULT: o.Ambiguous}),
        (425, {}, {K.CREATE: o.Ambiguous, K.RESULT: o.Ambiguous}),
        (409, {}, {K.CREATE: o.Throttled, K.RESULT: o.Throttled, K.STATUS: o.Rejected}),
        (409, {}, {K.CANCEL: o.Rejected, K.RECONCILE: o.Rejected}),
    ],
)
def test_an_http_status_is_judged_by_what_it_means_to_the_call(
    status: int, headers: dict[str, str], outcomes: dict[AttemptKind, type]
) -> None:
    """503 with Retry-After is later; 408 and 425 unknown; 409 is later only to a create
    (a request under our key in flight) and a result fetch (not ready yet)."""
    for kind, expected in outcomes.items():
        assert type(http(kind, status, **headers)) is expected, (status, kind)


def test_an_aws_error_is_judged_by_its_code_not_by_its_status() -> None:
    """An AWS answer names its error by code: a 409 ConflictException to a create is a
    refusal, not a create in flight; a throttle code is later whatever its status."""
    assert isinstance(aws(K.CREATE, "ConflictException", 409), o.Rejected)
    assert isinstance(aws(K.CREATE, "ExecutionLimitExceeded", 400), o.Throttled)
    assert isinstance(aws(K.CREATE, "ThrottlingException", 503), o.Throttled)


def test_an_unreadable_status_answer_states_nothing_and_elsewhere_is_unknown() -> None:
    """An answer that could not be read is, to a status read, an answer stating no state
    (judged by core/evidence.py); to any other call, an unknown outcome."""
    failed = Failed(reason="cannot parse", sent=Sent.UNREADABLE)
    read = classify(K.STATUS, failed)
    assert isinstance(read, o.Observed) and read.basis is Basis.NONE and read.unread
    assert isinstance(classify(K.CREATE, failed), o.Ambiguous)
    assert isinstance(classify(K.RESULT, failed), o.Ambiguous)


def test_an_invalid_request_is_refused_and_a_result_is_then_missing() -> None:
    """A request refused before it left is a refusal, or a missing result to a result fetch."""
    failed = Failed(reason="bad parameters", sent=Sent.INVALID)
    assert isinstance(classify(K.CREATE, failed), o.Rejected)
    assert isinstance(classify(K.RESULT, failed), o.ResultMissing)


@pytest.mark.parametrize(
    ("status", "count", "ended"),
    [
        (RemoteStatus.SUCCEEDED, 2, RemoteStatus.CANCELLED),
        (RemoteStatus.SUCCEEDED, 0.5, RemoteStatus.CANCELLED),
        (RemoteStatus.SUCCEEDED, 0, RemoteStatus.SUCCEEDED),
        (RemoteStatus.SUCCEEDED, True, RemoteStatus.SUCCEEDED),
        (RemoteStatus.SUCCEEDED, "3", RemoteStatus.SUCCEEDED),
        (RemoteStatus.SUCCEEDED, None, RemoteStatus.SUCCEEDED),
        (RemoteStatus.FAILED, 2, RemoteStatus.FAILED),
        (RemoteStatus.RUNNING, 2, RemoteStatus.RUNNING),
    ],
)
def test_a_success_with_cancelled_requests_ended_cancelled(
    status: RemoteStatus, count: object, ended: RemoteStatus
) -> None:
    """Only a success whose cancelled count is a number above zero reads as cancelled."""
    assert cancelled_by_count(status, count) is ended
