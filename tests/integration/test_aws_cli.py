"""The stock CLI with the shipped AWS provider, as a user runs it: a provider file holding
only `code = "aws-stepfunctions"` and its settings, `jobtrail submit` by that file's name,
`jobtrail run` to the result, against moto's server on loopback."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import boto3
import pytest
from aws_rig import ENV, ROLE, aws_env, moto_endpoint

import jobtrail
from jobtrail.cli.exits import RunExit
from jobtrail.core.states import State

from cliutil import Workspace, census_entries, serving
from harness import ROOT
from waits import until_true

__all__ = ["aws_env", "moto_endpoint"]  # fixtures used by name below

ECHO = {
    "StartAt": "Report",
    "States": {"Report": {"Type": "Pass", "Parameters": {"month.$": "$.month"}, "End": True}},
}


@pytest.mark.slow  # CLI processes driving a moto server, in real time
def test_the_stock_cli_runs_a_step_functions_execution_to_its_result(
    tmp_path: Path, aws_env: str
) -> None:
    """`submit` records the code provider (kind, name, version, settings); `run` drives it
    with the installed entry point to `succeeded`; the ledger holds no AWS secret."""
    sfn = boto3.client("stepfunctions", endpoint_url=aws_env)
    arn = sfn.create_state_machine(name="cli-report", definition=json.dumps(ECHO), roleArn=ROLE)[
        "stateMachineArn"
    ]
    (tmp_path / "providers").mkdir()
    (tmp_path / "providers" / "monthly-report.toml").write_text(
        'code = "aws-stepfunctions"\n'
        "[settings]\n"
        f'state_machine_arn = "{arn}"\n'
        f'endpoint_url = "{aws_env}"\n'
        "[poll]\n"
        'initial = "100ms"\n'
        'cap = "500ms"\n',
        encoding="utf-8",
    )
    ws = Workspace(root=tmp_path, base_url=aws_env)
    body = '{"month": "2026-02"}'
    submitted = ws.json("submit", "monthly-report", "--body", body, "--key", "feb")
    assert (submitted["provider_kind"], submitted["provider"]) == ("code", "aws-stepfunctions")
    assert submitted["provider_version"] == jobtrail.__version__
    op = submitted["operation_id"]
    finished = ws.run("run", op, "--json", check=False)
    assert finished.returncode == 0, finished.stderr
    status = json.loads(finished.stdout)
    assert status["state"] == State.SUCCEEDED
    (execution,) = sfn.list_executions(stateMachineArn=arn)["executions"]
    assert status["remote_job_id"] == execution["executionArn"]
    assert execution["name"] == submitted["idempotency_token"]
    assert ENV["AWS_SECRET_ACCESS_KEY"].encode() not in ws.db.read_bytes()


def docs_example() -> str:
    """The Python example of docs/aws.md (its one ```python block)."""
    text = (ROOT / "docs" / "aws.md").read_text(encoding="utf-8")
    match = re.search(r"^```python\n(.*?)^```", text, re.M | re.S)
    assert match is not None
    return match.group(1)


def test_the_python_example_of_the_docs_runs(tmp_path: Path, aws_env: str) -> None:
    """docs/aws.md's example, run as written in a folder whose providers/monthly-report.toml
    points at the local server: it prints `succeeded` and the execution's output."""
    sfn = boto3.client("stepfunctions", endpoint_url=aws_env)
    arn = sfn.create_state_machine(name="docs-report", definition=json.dumps(ECHO), roleArn=ROLE)[
        "stateMachineArn"
    ]
    (tmp_path / "providers").mkdir()
    (tmp_path / "providers" / "monthly-report.toml").write_text(
        'code = "aws-stepfunctions"\n[settings]\n'
        f'state_machine_arn = "{arn}"\nendpoint_url = "{aws_env}"\n'
        '[poll]\ninitial = "100ms"\ncap = "500ms"\n',
        encoding="utf-8",
    )
    (tmp_path / "example.py").write_text(docs_example(), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBTRAIL_")}
    done = subprocess.run(
        [sys.executable, "example.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert first.startswith("succeeded arn:aws:states:") and ":execution:docs-report:" in first
    assert json.loads(second) == {"month": "2026-02"}


def test_provider_check_says_what_each_aws_provider_can_promise(tmp_path: Path) -> None:
    """`provider check` by name: Step Functions reconciles by same-name retry and by status
    at the name; Athena by same-token retry only, provable while AWS remembers the token;
    neither stores a credential."""
    (tmp_path / "providers").mkdir()
    (tmp_path / "providers" / "reports-sfn.toml").write_text(
        'code = "aws-stepfunctions"\n[settings]\n'
        'state_machine_arn = "arn:aws:states:us-east-1:123456789012:stateMachine:reports"\n',
        encoding="utf-8",
    )
    ws = Workspace(root=tmp_path, base_url="http://127.0.0.1:9")
    sfn = ws.json("provider", "check", "reports-sfn")
    assert sfn["kind"] == "code" and sfn["at_most_once_provable"]
    assert sfn["guarantees"]["reconciliation"] == "same-token retry, status by client id"
    assert "AWS_SECRET_ACCESS_KEY" in sfn["guarantees"]["secrets"]
    athena = ws.json("provider", "check", "aws-athena")
    assert athena["guarantees"]["reconciliation"] == "same-token retry"
    # Athena cannot be asked which query holds a token: the proof lasts as long as AWS
    # remembers it, and the check says so (Step Functions can look the execution up).
    assert athena["guarantees"]["at-most-once create"].startswith(
        "provable while the provider remembers the token"
    )
    assert sfn["guarantees"]["at-most-once create"].startswith("provable: ")


# A site directory whose sitecustomize makes aiobotocore unimportable: a Python without the
# `aws` extra, for the processes started with it on PYTHONPATH.
WITHOUT_AWS = """
import sys


class _NoAws:
    def find_spec(self, name, path=None, target=None):
        if name == "aiobotocore" or name.startswith("aiobotocore."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NoAws())
"""


def test_a_worker_without_the_aws_extra_never_claims_aws_operations(
    tmp_path: Path, aws_env: str
) -> None:
    """Installed but unusable (aiobotocore missing): the loader says so before advertising
    the AWS providers, so `worker --until-idle` leaves their operations unclaimed and exits
    at once, `run` exits 7 naming the missing extra, and the operation stays as submitted."""
    (tmp_path / "providers").mkdir()
    (tmp_path / "providers" / "monthly-report.toml").write_text(
        'code = "aws-stepfunctions"\n[settings]\n'
        'state_machine_arn = "arn:aws:states:us-east-1:123456789012:stateMachine:reports"\n'
        f'endpoint_url = "{aws_env}"\n',
        encoding="utf-8",
    )
    site = tmp_path / "no-aws"
    site.mkdir()
    (site / "sitecustomize.py").write_text(WITHOUT_AWS, encoding="utf-8")
    ws = Workspace(root=tmp_path, base_url=aws_env)
    op = ws.json("submit", "monthly-report", "--body", '{"month": "2026-02"}')["operation_id"]
    bare = {"PYTHONPATH": str(site)}
    worker = ws.run("worker", "--until-idle", "-v", check=False, **bare)
    assert worker.returncode == 0, worker.stderr
    assert "aiobotocore" in worker.stderr and "jobtrail[aws]" in worker.stderr
    assert "claimed" not in worker.stderr.lower()
    ran = ws.run("run", op, "--json", check=False, **bare)
    assert ran.returncode == RunExit.PROVIDER_MISSING, ran.stderr
    assert "jobtrail[aws]" in ran.stderr
    status = ws.json("status", op)
    assert status["state"] == State.CREATE_PENDING


def test_the_stock_cli_takes_a_census_of_a_step_functions_provider_file(
    tmp_path: Path, aws_env: str
) -> None:
    """`census NAME` of a code provider's settings file reads ListExecutions: an execution
    planted under our token's shape is unknown here, another name not ours; `provider
    check` says what the census sees."""
    sfn = boto3.client("stepfunctions", endpoint_url=aws_env)
    arn = sfn.create_state_machine(name="cli-census", definition=json.dumps(ECHO), roleArn=ROLE)[
        "stateMachineArn"
    ]
    nightly_file(tmp_path, arn, aws_env)
    month = '{"month": "2026-02"}'
    unknown = sfn.start_execution(stateMachineArn=arn, name="idem_" + "Z" * 32, input=month)
    other = sfn.start_execution(stateMachineArn=arn, name="by-hand", input=month)
    ws = Workspace(root=tmp_path, base_url=aws_env)
    ours = ws.json("submit", "nightly", "--body", month, "--key", "feb")["operation_id"]
    assert ws.run("run", ours, check=False).returncode == 0

    census = ws.json("census", "nightly", "--all")

    assert census["sight"] == "listing" and census["reach"]["complete"]
    assert census["sees"].startswith("every execution of the state machine (ListExecutions")
    jobs = {job["job_id"]: (job["category"], job["operation_id"]) for job in census["jobs"]}
    followed = ws.json("status", ours)["remote_job_id"]
    assert jobs == {
        followed: ("followed", ours),
        unknown["executionArn"]: ("unknown_here", "idem_" + "Z" * 32),
        other["executionArn"]: ("not_ours", None),
    }
    checked = ws.run("provider", "check", "nightly", check=False)
    assert "every execution of the state machine" in checked.stdout, checked.stderr
    assert ENV["AWS_SECRET_ACCESS_KEY"].encode() not in ws.db.read_bytes()


def nightly_file(folder: Path, arn: str, endpoint: str) -> None:
    """providers/nightly.toml in `folder`: the Step Functions code provider's settings file."""
    (folder / "providers").mkdir()
    (folder / "providers" / "nightly.toml").write_text(
        f'code = "aws-stepfunctions"\n[settings]\nstate_machine_arn = "{arn}"\n'
        f'endpoint_url = "{endpoint}"\n',
        encoding="utf-8",
    )


def test_serve_takes_a_census_of_a_step_functions_provider_file(
    tmp_path: Path, aws_env: str
) -> None:
    """`serve --census NAME` resolves a code provider's settings file by name and records
    its census under worker:census: an execution under our token's shape is unknown here."""
    sfn = boto3.client("stepfunctions", endpoint_url=aws_env)
    arn = sfn.create_state_machine(name="serve-census", definition=json.dumps(ECHO), roleArn=ROLE)[
        "stateMachineArn"
    ]
    nightly_file(tmp_path, arn, aws_env)
    sfn.start_execution(stateMachineArn=arn, name="idem_" + "Y" * 32, input='{"month": "x"}')
    ws = Workspace(root=tmp_path, base_url=aws_env)
    ws.json("submit", "nightly", "--body", '{"month": "2026-02"}')  # the ledger, one op
    with serving(ws, "--census", "nightly"):
        until_true(lambda: bool(census_entries(ws.db)), 30, "a census recorded by serve")
        (taken,) = census_entries(ws.db)
        assert taken["actor"] == "worker:census", taken
        assert isinstance(taken["data"], dict) and taken["data"]["counts"]["unknown_here"] == 1
