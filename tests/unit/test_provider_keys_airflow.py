"""The provider-file keys the Airflow profile needs (docs/providers.md): a cancel with a
body, `{idempotency_token}` in paths, `[reconcile] lookup`, a create's `"409" = "exists"`,
`result.field` for a GET result, `path_values`, a monitor's 4xx declared final, and token
commands in `auth`; each misuse refused at load with a clear error, and the answers read
by the pure parsers."""

from __future__ import annotations

import copy
import json
import tomllib
from typing import Any

import pytest

from jobtrail.core import outcomes as o
from jobtrail.core.states import RemoteStatus
from jobtrail.errors import ProviderConfigError
from jobtrail.profiles import shipped_profile
from jobtrail.providers.file.config import parse_provider
from jobtrail.providers.file.spec import ProviderSpec
from jobtrail.providers.http.lookup import parse_lookup
from jobtrail.providers.http.parse import parse_create, parse_status


def airflow() -> dict[str, Any]:
    profile = shipped_profile("airflow")
    assert profile is not None
    return tomllib.loads(profile.text)


def spec(doc: dict[str, Any] | None = None) -> ProviderSpec:
    return parse_provider(doc or airflow())


def test_the_airflow_profile_declares_what_it_needs() -> None:
    """The profile loads: the token is the run id, looked up by it; cancel is a PATCH with a
    body; a 409 says exists; the XCom's `value` is the result."""
    s = spec()
    caps = s.capabilities
    assert caps.status_by_client_id and caps.lookup and caps.at_most_once_provable
    assert not caps.same_token_retry
    assert s.idempotency is not None and s.idempotency.field == "dag_run_id"
    assert s.cancel_method == "PATCH" and s.cancel_body == {
        "state": "failed",
        "note": "cancelled through jobtrail",
    }
    assert s.lookup is not None and "{idempotency_token}" in s.lookup.path
    assert s.result.field == "value" and s.result.source == "path"
    assert s.create_placeholders == ("dag_id", "task_id")


def _changed(change: Any) -> dict[str, Any]:
    doc = copy.deepcopy(airflow())
    change(doc)
    return doc


@pytest.mark.parametrize(
    ("change", "message"),
    [
        # placeholders nothing fills, in any path
        (lambda d: d["status"].update(path="/api/v2/runs/{jobid}"), r"status.path: \{jobid\}"),
        (lambda d: d["cancel"].update(path="/x/{run}"), r"cancel.path: \{run\}"),
        (lambda d: d["result"].update(path="/x/{task_id}/{key}"), r"result.path: \{key\}"),
        (
            lambda d: d["reconcile"]["lookup"].update(path="/x/{job_id}/{idempotency_token}"),
            r"reconcile.lookup.path: \{job_id\}",
        ),
        # the cancel's body
        (lambda d: d["cancel"].update(body="failed"), r"cancel.body must be a table"),
        (lambda d: d["cancel"].update(body={}), r"cancel.body must be a table"),
        (lambda d: d["cancel"].update(method="GET"), "body cannot go with method GET"),
        # the lookup
        (lambda d: d["reconcile"]["lookup"].update(path="/x/{dag_id}"), "must hold"),
        (lambda d: d["create"].pop("idempotency"), "declare create.idempotency"),
        (lambda d: d["reconcile"]["lookup"].update(absent=[400]), "404 and/or 410"),
        (lambda d: d["reconcile"]["lookup"].update(jobid="x"), "unknown key 'jobid'"),
        (
            lambda d: d["reconcile"].update(list={"path": "/x"}),
            "reconcile.list needs create.client_reference",
        ),
        # "exists"
        (lambda d: d["reconcile"].pop("lookup"), '"exists" needs a lookup'),
        (lambda d: d["create"].update(codes={"201": "exists"}), "for a 4xx answer"),
        (lambda d: d["status"].update(codes={"409": "exists"}), "not a status"),
        # path values
        (lambda d: d.update(path_values=["task"]), r"\{task\} appears in no path"),
        (lambda d: d.update(path_values=["job_id"]), "not a name a submitter can fill"),
        (lambda d: d.update(path_values="task_id"), "must be a list"),
        # result.field with a GET result
        (lambda d: d["result"].update(checksum_header="X-Sum"), "not with"),
        (lambda d: d["result"].update(format="jsonl"), "not with"),
    ],
)
def test_misused_keys_are_refused_at_load(change: Any, message: str) -> None:
    """Each misuse is a ProviderConfigError that says what is wrong."""
    with pytest.raises(ProviderConfigError, match=message):
        parse_provider(_changed(change))


def test_exists_and_a_same_token_retry_contradict() -> None:
    """A provider that answers a retry with the original job does not answer 409 exists."""
    doc = airflow()
    doc["reconcile"]["same_token"] = True
    with pytest.raises(ProviderConfigError, match="contradict"):
        parse_provider(doc)


@pytest.mark.parametrize(
    ("auth", "message"),
    [
        ({"header": "Authorization"}, "exactly one of `env`"),
        ({"header": "Authorization", "env": "T", "command": ["x"]}, "exactly one of"),
        ({"header": "Authorization", "command": "gcloud auth print-access-token"}, "list"),
        ({"header": "Authorization", "command": []}, "list of arguments"),
        ({"header": "Authorization", "command": ["x", 3]}, "list of arguments"),
        ({"header": "Authorization", "env": "T", "lifetime": "1h"}, "belong to a token"),
        ({"header": "Authorization", "file": "/t", "timeout": "5s"}, "token command may run"),
        ({"header": "Authorization", "command": ["x"], "lifetime": "soon"}, "auth.lifetime"),
        ({"header": "Authorization", "command": ["x"], "timeout": "1h"}, "between 1s and 5m"),
        ({"header": "Authorization", "command": ["x"], "cache": "1h"}, "unknown key 'cache'"),
        ({"header": "Authorization", "token": "abc"}, "never hold the secret"),
    ],
)
def test_auth_forms_are_checked(auth: dict[str, Any], message: str) -> None:
    doc = airflow()
    doc["auth"] = auth
    with pytest.raises(ProviderConfigError, match=message):
        parse_provider(doc)


def test_a_token_command_and_a_token_file_load() -> None:
    doc = airflow()
    doc["auth"] = {
        "header": "Authorization",
        "prefix": "Bearer ",
        "command": ["az", "account", "get-access-token", "--query", "accessToken", "-o", "tsv"],
        "lifetime": "50m",
        "timeout": "20s",
    }
    auth = spec(doc).auth
    assert auth is not None and auth.fetched and auth.command[0] == "az" and auth.env is None
    assert auth.lifetime is not None and auth.lifetime.total_seconds() == 3000
    doc["auth"] = {"header": "Authorization", "file": "/var/run/token"}
    auth = spec(doc).auth
    assert auth is not None and auth.fetched and auth.file == "/var/run/token"


def _answer(document: Any) -> bytes:
    return json.dumps(document).encode()


def test_a_create_answered_409_exists_goes_to_the_lookup() -> None:
    """Declared "exists": ambiguous (a job may be ours), never a rejection that would end
    the operation, never "later" that would resend it."""
    out = parse_create(spec(), 409, {}, _answer({"detail": {"reason": "Unique constraint"}}))
    assert isinstance(out, o.Ambiguous) and out.http_status == 409
    assert "already exists" in out.reason and "looked up" in out.reason


def test_without_the_declaration_a_409_stays_in_flight() -> None:
    doc = airflow()
    doc["create"].pop("codes")
    assert isinstance(parse_create(spec(doc), 409, {}, b"{}"), o.Throttled)


def test_the_trigger_answer_names_the_run() -> None:
    answer = {"dag_run_id": "idem_abc", "state": "queued", "dag_id": "d"}
    out = parse_create(spec(), 200, {}, _answer(answer))
    assert isinstance(out, o.Accepted) and out.job_id == "idem_abc"
    assert out.remote_status is RemoteStatus.RUNNING


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (200, {"dag_run_id": "idem_abc", "state": "running"}, ("idem_abc",)),
        (404, {"detail": "The DagRun ... was not found"}, ()),
    ],
)
def test_a_lookup_names_the_run_or_proves_there_is_none(
    status: int, body: Any, expected: tuple[str, ...]
) -> None:
    s = spec()
    assert s.lookup is not None
    out = parse_lookup(s.lookup, s, status, {}, _answer(body))
    assert isinstance(out, o.Found) and out.job_ids == expected


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (200, b"not json", o.Ambiguous),
        (200, _answer({"dag_run_id": "a/b"}), o.Ambiguous),  # not one path segment
        (200, _answer({"state": "running"}), o.Ambiguous),  # names no run
        (500, b"", o.Ambiguous),
        (429, b"", o.Throttled),
        (403, _answer({"detail": "Forbidden"}), o.Rejected),
    ],
)
def test_a_lookup_that_proves_nothing(status: int, body: bytes, kind: type) -> None:
    """Only a run named, or a declared absent code, settles the question."""
    s = spec()
    assert s.lookup is not None
    assert isinstance(parse_lookup(s.lookup, s, status, {}, body), kind)


def test_a_declared_404_on_the_monitor_is_final() -> None:
    """`[status] codes = { "404" = "failed" }`: a run deleted is failed, not a refusal."""
    out = parse_status(spec(), 404, {}, _answer({"detail": "The DagRun was not found"}))
    assert isinstance(out, o.Observed) and out.remote_status is RemoteStatus.FAILED
    assert out.remote_state == "HTTP 404"
    doc = airflow()
    doc["status"].pop("codes")
    assert isinstance(parse_status(spec(doc), 404, {}, b"{}"), o.Rejected)


@pytest.mark.parametrize(
    ("word", "status"),
    [
        ("queued", RemoteStatus.RUNNING),
        ("running", RemoteStatus.RUNNING),
        ("success", RemoteStatus.SUCCEEDED),
        ("failed", RemoteStatus.FAILED),
    ],
)
def test_dag_run_states(word: str, status: RemoteStatus) -> None:
    out = parse_status(spec(), 200, {}, _answer({"dag_run_id": "r", "state": word}))
    assert isinstance(out, o.Observed) and out.remote_status is status
