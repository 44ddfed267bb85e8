"""The AWS providers send each call once: botocore's retries are off, and so is the re-send
of aiohttp under it (a GET of Bedrock's REST protocol or of S3 would otherwise go out twice
when its connection drops). Against a real loopback server (tests/dropping.py) standing in
for the AWS endpoint: it reads each request whole, then drops it or answers a throttle."""

from __future__ import annotations

from pathlib import Path

import pytest
from aws_rig import set_env

from dropping import Answer, DroppingServer, Seen
from jobtrail.core import outcomes as o
from jobtrail.core.classify import classify
from jobtrail.core.model import AttemptKind
from jobtrail.providers.aws.calls import Answer as AwsAnswer
from jobtrail.providers.aws.calls import AwsCalls, AwsSettings, Failure, Sent

pytest.importorskip("aiobotocore")


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env: dict[str, str] = {}
    set_env(env, tmp_path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN", "AWS_MAX_ATTEMPTS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_RETRY_MODE", "legacy")  # the environment cannot turn retries on
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "5")


async def call(
    script: DroppingServer, service: str, action: str, params: dict[str, str]
) -> AwsAnswer | Failure:
    base = await script.start()
    calls = AwsCalls(service, AwsSettings(region="us-east-1", endpoint_url=base, timeout=5.0))
    try:
        return await calls.invoke(action, params)
    finally:
        await calls.close()
        await script.close()


@pytest.mark.parametrize(
    ("service", "action", "params", "method"),
    [
        ("bedrock", "GetModelInvocationJob", {"jobIdentifier": "j1"}, "GET"),
        ("bedrock", "StopModelInvocationJob", {"jobIdentifier": "j1"}, "POST"),
        ("s3", "GetObject", {"Bucket": "out", "Key": "j1/result.jsonl"}, "GET"),
        ("stepfunctions", "DescribeExecution", {"executionArn": "arn:aws:states:x"}, "POST"),
    ],
)
async def test_a_dropped_aws_call_is_sent_once_and_reported_unanswered(
    service: str, action: str, params: dict[str, str], method: str
) -> None:
    """The connection closes before the answer: one request on the wire, reported as sent
    with no answer (never re-sent by botocore or aiohttp)."""
    server = DroppingServer(lambda seen: None)
    failure = await call(server, service, action, params)
    assert isinstance(failure, Failure) and failure.sent is Sent.NO_ANSWER, failure
    assert [s.method for s in server.seen] == [method], server.seen


async def test_a_throttled_aws_call_is_one_attempt() -> None:
    """A throttle answer is the call's answer: one request, reported throttled, the retry
    left to the core (botocore's standard and legacy modes would send it again)."""

    def throttle(seen: Seen) -> Answer:
        error = {"__type": "ThrottlingException", "message": "Rate exceeded"}
        return Answer(status=400, json=error, headers={"x-amzn-RequestId": "r1"})

    server = DroppingServer(throttle)
    params = {"executionArn": "arn:aws:states:us-east-1:123456789012:execution:m:e"}
    failure = await call(server, "stepfunctions", "DescribeExecution", params)
    assert isinstance(failure, Failure), failure
    assert isinstance(classify(AttemptKind.STATUS, failure), o.Throttled), failure
    assert failure.code == "ThrottlingException"
    assert len(server.seen) == 1, server.seen


REGION = {"x-amz-bucket-region": "us-west-2", "Content-Type": "application/xml"}
MALFORMED = (
    b"<Error><Code>AuthorizationHeaderMalformed</Code><Message>wrong region</Message>"
    b"<Region>us-west-2</Region></Error>"
)


@pytest.mark.parametrize(
    "answer",
    [
        Answer(status=301, headers={**REGION, "Location": "/elsewhere"}),
        Answer(status=307, headers={**REGION, "Location": "/elsewhere"}),
        Answer(status=400, headers=REGION, raw=MALFORMED),
    ],
    ids=["301", "307", "400-region"],
)
async def test_an_s3_redirect_is_the_answer_not_a_second_request(answer: Answer) -> None:
    """A redirect (or botocore's "wrong region" re-send) is never followed: the answer is
    the call's answer, and one request crossed the wire."""
    server = DroppingServer(lambda seen: answer)
    params = {"Bucket": "out", "Key": "j1/result.jsonl"}
    failure = await call(server, "s3", "GetObject", params)
    assert isinstance(failure, Failure) and failure.sent is Sent.ANSWERED, failure
    assert failure.http_status == answer.status
    assert [s.path for s in server.seen] == ["/out/j1/result.jsonl"], server.seen
