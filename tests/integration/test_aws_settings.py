"""The AWS providers as plug-ins: found by their entry points, made from `[settings]`, never
holding a credential, usable without the `aws` extra only to the point of saying what to
install, and honest about calls that never left (no credentials, nothing listening)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from aws_rig import set_env

from jobtrail.core import outcomes as o
from jobtrail.core.model import AttemptKind, JobRequest
from jobtrail.errors import ProviderConfigError
from jobtrail.providers.aws import athena, stepfunctions
from jobtrail.providers.check import check_lines
from jobtrail.providers.code.plugins import load_plugins

from factories import make_op

ARN = "arn:aws:states:us-east-1:123456789012:stateMachine:reports"


def test_both_providers_are_found_by_entry_point_and_declare_their_contract() -> None:
    """`aws-stepfunctions` and `aws-athena` are installed entry points; what they declare
    (version, capabilities) is what the ledger records, and their settings hold no secret."""
    plugins = load_plugins()
    sfn, spec = plugins["aws-stepfunctions"].build({"state_machine_arn": ARN})
    assert spec.name == "aws-stepfunctions" and spec.version == sfn.version
    caps = spec.capabilities
    assert caps.same_token_retry and caps.lookup and caps.cancel
    assert spec.document["settings"] == {"state_machine_arn": ARN}
    _, spec = plugins["aws-athena"].build({"work_group": "reports"})
    assert spec.capabilities.same_token_retry and not spec.capabilities.lookup
    assert "AWS_SECRET_ACCESS_KEY" in spec.secret_env


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        ({}, "'state_machine_arn' is required"),
        ({"state_machine_arn": "reports"}, "not an unqualified Step Functions state machine ARN"),
        ({"state_machine_arn": ARN, "aws_secret_access_key": "x"}, "would store an AWS credential"),
        ({"state_machine_arn": ARN, "regoin": "eu-west-1"}, "unknown setting 'regoin'"),
        ({"state_machine_arn": ARN, "endpoint_url": "localhost:5000"}, "must be an http(s) URL"),
    ],
)
def test_bad_step_functions_settings_are_one_clear_line(
    settings: dict[str, str], words: str
) -> None:
    """A mistake in `[settings]` is refused when the provider is made, never mid-call."""
    with pytest.raises(ProviderConfigError) as caught:
        stepfunctions.factory(settings)
    assert words in str(caught.value)


def test_bad_athena_settings_are_refused() -> None:
    """Athena's own settings are checked too."""
    with pytest.raises(ProviderConfigError, match="max_rows"):
        athena.factory({"max_rows": 0})
    with pytest.raises(ProviderConfigError, match="s3://"):
        athena.factory({"output_location": "/tmp/out"})


def test_without_aiobotocore_the_aws_providers_are_set_aside_naming_the_extra() -> None:
    """The entry points ship with jobtrail; without the `aws` extra, loading plug-ins still
    works (a worker starts), and the AWS providers are set aside as unusable, naming the
    extra, instead of being advertised (a worker would claim their operations)."""
    script = (
        "import sys\n"
        "sys.modules['aiobotocore'] = None\n"
        "sys.modules['botocore'] = None\n"
        "from jobtrail.providers.code.plugins import load_plugins\n"
        "plugins = load_plugins()\n"
        "print('aws-athena' in plugins)\n"
        "print(plugins.broken['aws-athena'])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    loaded, why = done.stdout.splitlines()
    assert loaded == "False"
    assert "aiobotocore" in why and "pip install 'jobtrail[aws]'" in why


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_a_start_without_credentials_is_not_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No credentials anywhere in the chain: nothing is sent, and the outcome says so
    (throttled: the create stays pending, it never becomes `create_unknown`)."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance-role lookup
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    provider = stepfunctions.factory(
        {"state_machine_arn": ARN, "endpoint_url": f"http://127.0.0.1:{free_port()}"}
    )
    try:
        reply = await provider.call(AttemptKind.CREATE, make_op())
    finally:
        await provider.close()
    assert isinstance(reply.outcome, o.Throttled)
    assert reply.detail["sent"] is False and "credentials" in reply.outcome.reason.lower()


@pytest.fixture
def fake_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env: dict[str, str] = {}
    set_env(env, tmp_path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)


async def test_nothing_listening_is_not_sent(fake_credentials: None) -> None:
    """A refused connection proves the request never left: throttled, not ambiguous."""
    provider = athena.factory({"endpoint_url": f"http://127.0.0.1:{free_port()}"})
    request = JobRequest(method="CALL", target="aws-athena:code create", body={"query": "SELECT 1"})
    op = make_op(request=request, idempotency_token="idem_" + "a" * 32)
    try:
        reply = await provider.call(AttemptKind.CREATE, op)
    finally:
        await provider.close()
    assert isinstance(reply.outcome, o.Throttled)
    assert reply.detail["sent"] is False


async def test_a_request_botocore_refuses_is_rejected_unsent(fake_credentials: None) -> None:
    """Parameters botocore's own validation refuses (a token shorter than Athena's 32
    characters, here) never leave: a rejection, marked not sent."""
    provider = athena.factory({"endpoint_url": f"http://127.0.0.1:{free_port()}"})
    request = JobRequest(method="CALL", target="aws-athena:code create", body={"query": "SELECT 1"})
    try:
        reply = await provider.call(AttemptKind.CREATE, make_op(request=request))
    finally:
        await provider.close()
    assert isinstance(reply.outcome, o.Rejected) and reply.detail["sent"] is False


def test_what_provider_check_can_say_is_honest_about_athena() -> None:
    """`provider check` names Athena's missing lookup and Step Functions' lookup, from the
    capabilities they declare (the same path as a provider file's)."""
    plugins = load_plugins()
    said = dict(check_lines(plugins["aws-athena"].build({})[1]))
    assert said["lookup"].startswith("none")
    said = dict(check_lines(plugins["aws-stepfunctions"].build({"state_machine_arn": ARN})[1]))
    assert "status by client id" in said["reconciliation"] and "lookup" not in said


def test_execution_names_and_arns_follow_from_the_token() -> None:
    """The name is the token (Step Functions' alphabet kept, at most 80 characters), and the
    ARN of the execution is built from the state machine's."""
    assert stepfunctions.execution_name("idem_0123abcd") == "idem_0123abcd"
    assert stepfunctions.execution_name("idem_a.b/c" + "x" * 100) == ("idem_a-b-c" + "x" * 70)
    assert stepfunctions.execution_arn(ARN, "idem_1") == (
        "arn:aws:states:us-east-1:123456789012:execution:reports:idem_1"
    )
    assert stepfunctions.same_input('{"b": 1, "a": [1, 2]}', '{"a":[1,2],"b":1}') is True
    assert stepfunctions.same_input('{"a": 2}', '{"a":1}') is False
    assert stepfunctions.same_input(None, "{}") is None
