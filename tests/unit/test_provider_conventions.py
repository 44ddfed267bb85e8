"""The provider file's convention keys (docs/providers.md, "Conventions"): every example of
the page loads, and pure parsing reads real APIs' answers with them."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobtrail.core import outcomes as o
from jobtrail.core.evidence import judge
from jobtrail.core.model import Idempotency
from jobtrail.core.states import RemoteStatus
from jobtrail.core.validate import Candidate, Rules, validate
from jobtrail.errors import ProviderConfigError
from jobtrail.profiles import shipped_profile
from jobtrail.providers.file.config import ProviderSpec, parse_provider
from jobtrail.providers.http.lookup import parse_list
from jobtrail.providers.http.parse import parse_create, parse_status, provider_error

ROOT = Path(__file__).resolve().parents[2]
ARM = "https://management.azure.com"
PUT_URL = f"{ARM}/subscriptions/s/resourceGroups/g/providers/Microsoft.Example/things/op_1"


def examples() -> dict[str, dict[str, Any]]:
    text = (ROOT / "docs" / "providers.md").read_text()
    docs = [tomllib.loads(block) for block in re.findall(r"```toml\n(.*?)```", text, re.S)]
    return {doc["name"]: doc for doc in docs}


def spec(name: str) -> ProviderSpec:
    return parse_provider(examples()[name])


def arm_reading() -> dict[str, Any]:
    """The docs' ARM PUT without `at_create`: how its create answers are read, before a
    done one is taken as the result."""
    doc = examples()["azure-arm-put"]
    del doc["result"]["at_create"]
    return doc


def body(document: Any) -> bytes:
    return json.dumps(document).encode()


def test_every_convention_example_loads() -> None:
    """Each documented convention example parses into a spec with the declared capabilities."""
    loaded = {name: parse_provider(doc) for name, doc in examples().items()}
    names = {"azure-arm-put", "azure-ai", "google-lro", "openai-batch-example"}
    assert names | {"anthropic-batch-example"} <= set(loaded)
    assert loaded["azure-arm-put"].capabilities.idempotency is Idempotency.NATURAL
    assert loaded["azure-arm-put"].capabilities.at_most_once_provable
    assert loaded["google-lro"].capabilities.idempotency is Idempotency.QUERY
    assert loaded["openai-batch-example"].capabilities.lookup


@pytest.mark.parametrize(
    ("table", "change", "message"),
    [
        ("create", {"identiy": ["request"]}, "unknown key 'identiy' in [create]"),
        ("create", {"identity": ["body"]}, "is not one of"),
        ("create", {"identity": ["header"]}, "write header:NAME"),
        ("create", {"codes": {"202": "later"}}, "create.codes.202 must be one of"),
        ("create", {"codes": {"404": "body"}}, "only a 2xx answer's body is read"),
        ("create", {"idempotency": {"natural": True, "header": "X"}}, "exactly one of"),
        ("create", {"idempotency": {"quer": "x"}}, "unknown key 'quer'"),
        ("status", {"missing": "maybe"}, "status.missing must be"),
        ("create", {"missing": {"201": "maybe"}}, "create.missing.201 must be running"),
        ("create", {"missing": {"404": "failed"}}, "create.missing: '404' is not a 2xx"),
        ("status", {"ignore_case": "yes"}, "ignore_case must be true or false"),
        ("status", {"follow": [1]}, "status.follow must be a header, or a list of headers"),
        ("result", {"from": "somewhere"}, 'result.from must be "path" or "status"'),
        ("result", {"format": "xml"}, "result.format must be"),
        ("result", {"link": "x", "merge": True, "format": "jsonl"}, "result.merge must be"),
        ("result", {"partial": True}, "result.partial must be true or false, and needs"),
        ("status", {"cancelled_count": 3}, "status.cancelled_count must be"),
        ("create", {"idempotency": {"natural": True, "format": "uuid"}}, "format must be"),
    ],
)
def test_convention_mistakes_are_refused(table: str, change: dict[str, Any], message: str) -> None:
    """A misspelt or impossible convention key is refused with a clear error."""
    doc = examples()["azure-arm-put"]
    doc[table] = {**doc.get(table, {}), **change}
    with pytest.raises(ProviderConfigError, match=re.escape(message)):
        parse_provider(doc)


def test_natural_idempotency_is_refused_for_a_post() -> None:
    """Only a PUT or DELETE on a client-chosen URL is idempotent by nature."""
    doc = examples()["azure-arm-put"]
    doc["create"]["method"] = "POST"
    with pytest.raises(ProviderConfigError, match="natural idempotency belongs to a PUT"):
        parse_provider(doc)


def test_an_unknown_list_key_is_refused() -> None:
    """reconcile.list keys are checked too: `mach` is not `match`."""
    doc = examples()["openai-batch-example"]
    doc["reconcile"]["list"]["mach"] = "metadata.x"
    with pytest.raises(
        ProviderConfigError, match=re.escape("unknown key 'mach' in reconcile.list")
    ):
        parse_provider(doc)


def test_a_header_only_create_is_named_by_its_declared_headers() -> None:
    """A 202 with no body: the status URL is the first declared header present, and the
    job's identity is the resource URL the create was sent to."""
    arm = spec("azure-arm-put")
    headers = {"Location": f"{ARM}/loc/1", "Azure-AsyncOperation": f"{ARM}/ops/1"}
    out = parse_create(arm, 202, headers, b"", PUT_URL)
    assert isinstance(out, o.Accepted)
    assert out.job_id == PUT_URL and out.status_url == f"{ARM}/ops/1"
    assert out.remote_status is RemoteStatus.RUNNING
    only_location = parse_create(arm, 202, {"Location": "/loc/1"}, b"", PUT_URL)
    assert isinstance(only_location, o.Accepted) and only_location.status_url == "/loc/1"


def test_the_order_of_sources_says_whether_a_header_or_the_body_wins() -> None:
    """With `field:` first, the body's status URL wins over a header; reversed, the header."""
    doc = arm_reading()
    doc["create"]["status_from"] = ["field:statusUrl", "header:Location"]
    answer = body({"statusUrl": f"{ARM}/from-body", "properties": {}})
    first = parse_create(parse_provider(doc), 201, {"Location": f"{ARM}/hdr"}, answer, PUT_URL)
    assert isinstance(first, o.Accepted) and first.status_url == f"{ARM}/from-body"
    doc["create"]["status_from"] = ["header:Location", "field:statusUrl"]
    second = parse_create(parse_provider(doc), 201, {"Location": f"{ARM}/hdr"}, answer, PUT_URL)
    assert isinstance(second, o.Accepted) and second.status_url == f"{ARM}/hdr"


def test_an_identity_url_off_the_providers_origin_is_refused() -> None:
    """A header naming another host never becomes the job's identity: the create is
    ambiguous, as any answer we cannot read."""
    doc = examples()["azure-ai"]
    out = parse_create(parse_provider(doc), 202, {"Operation-Location": "https://evil/x"}, b"")
    assert isinstance(out, o.Ambiguous) and "origin" in out.reason


def test_a_status_url_off_the_providers_origin_is_passed_over() -> None:
    """A monitor header naming another host is ignored as if absent: the next declared
    place names the status URL (here `Location`, then the resource itself)."""
    arm = parse_provider(arm_reading())
    foreign = {"Azure-AsyncOperation": "http://localhost/fakeurl", "Location": "/loc/1"}
    out = parse_create(arm, 202, foreign, b"", PUT_URL)
    assert isinstance(out, o.Accepted)
    assert (out.status_url, out.status_via) == ("/loc/1", "Location")
    alone = parse_create(arm, 202, {"Azure-AsyncOperation": "https://evil.example/x"}, b"", PUT_URL)
    assert isinstance(alone, o.Accepted) and (alone.status_url, alone.status_via) == (PUT_URL, None)


@pytest.mark.parametrize(
    ("code", "answer", "expected"),
    [
        (200, {"properties": {"provisioningState": "Succeeded"}}, RemoteStatus.SUCCEEDED),
        (201, {"properties": {"provisioningState": "Creating"}}, RemoteStatus.UNKNOWN),
        (201, {"properties": {"provisioningState": "Failed"}}, RemoteStatus.FAILED),
        (201, {"properties": {}}, RemoteStatus.RUNNING),  # azure-core: InProgress
        (200, {"properties": {}}, RemoteStatus.SUCCEEDED),
        (202, None, RemoteStatus.RUNNING),
        (204, None, RemoteStatus.SUCCEEDED),
    ],
)
def test_each_create_status_code_is_read_as_declared(
    code: int, answer: Any, expected: RemoteStatus
) -> None:
    """202 is running, 200/201 read the body (absent state: a 200 succeeded, a 201 still
    running), 204 is done; a body-less 2xx is not ambiguous when its code says what it
    means."""
    raw = b"" if answer is None else body(answer)
    out = parse_create(parse_provider(arm_reading()), code, {}, raw, PUT_URL)
    assert isinstance(out, o.Accepted) and out.remote_status is expected


def test_a_body_less_create_without_a_declared_code_stays_ambiguous() -> None:
    """The article's convention is unchanged: a 2xx that names no job may have made one."""
    doc = examples()["reports"]
    out = parse_create(parse_provider(doc), 202, {}, b"")
    assert isinstance(out, o.Ambiguous)


@pytest.mark.parametrize(
    ("code", "answer", "state"),
    [
        (200, {"status": "InProgress"}, RemoteStatus.UNKNOWN),
        (200, {"status": "succeeded"}, RemoteStatus.SUCCEEDED),
        (200, {"status": "Canceled"}, RemoteStatus.CANCELLED),
        (200, {"properties": {"provisioningState": "Failed"}}, RemoteStatus.FAILED),
        (200, {"name": "a result without a state"}, RemoteStatus.SUCCEEDED),
        (202, None, RemoteStatus.RUNNING),
        (204, None, RemoteStatus.SUCCEEDED),
    ],
)
def test_status_is_read_from_codes_fields_and_words_in_any_case(
    code: int, answer: Any, state: RemoteStatus
) -> None:
    """The status code, the first state path holding text (case-insensitive words) and
    the declared state of an answer without one, in that order."""
    raw = b"" if answer is None else body(answer)
    out = parse_status(spec("azure-arm-put"), code, {}, raw)
    assert isinstance(out, o.Observed) and out.remote_status is state


@pytest.mark.parametrize(
    ("answer", "state"),
    [
        ({"name": "operations/1", "metadata": {"state": "RUNNING"}}, RemoteStatus.RUNNING),
        ({"name": "operations/1", "done": False}, RemoteStatus.RUNNING),
        ({"name": "operations/1", "done": True, "response": {"x": 1}}, RemoteStatus.SUCCEEDED),
        (
            {"name": "operations/1", "done": True, "error": {"code": 1, "message": "stop"}},
            RemoteStatus.CANCELLED,
        ),
        (
            {"name": "operations/1", "done": True, "error": {"code": 3, "message": "bad"}},
            RemoteStatus.FAILED,
        ),
    ],
)
def test_googles_done_with_error_or_response_decides(answer: Any, state: RemoteStatus) -> None:
    """AIP-151: not done is running; done with an error is failed (code 1: cancelled);
    done without one has succeeded."""
    out = parse_status(spec("google-lro"), 200, {}, body(answer))
    assert isinstance(out, o.Observed) and out.remote_status is state


def test_a_resource_name_is_a_job_id_of_safe_segments() -> None:
    """Google names its operations `operations/123`: accepted as a name of segments, and
    refused when a segment is `..`."""
    google = spec("google-lro")
    good = parse_create(google, 200, {}, body({"name": "operations/123"}))
    assert isinstance(good, o.Accepted) and good.job_id == "operations/123"
    bad = parse_create(google, 200, {}, body({"name": "operations/../admin"}))
    assert isinstance(bad, o.Ambiguous)


@pytest.mark.parametrize(
    ("code", "answer", "expected"),
    [
        (200, {"done": True, "error": {"code": 3, "message": "bad input"}}, ("3", "bad input")),
        (400, {"error": {"code": "InvalidThing", "message": "no"}}, ("InvalidThing", "no")),
        (200, {"errors": {"object": "list", "data": [{"code": "e1", "message": "m1"}]}}, None),
        (
            400,
            {"type": "error", "error": {"type": "invalid_request_error", "message": "x"}},
            ("invalid_request_error", "x"),
        ),
    ],
)
def test_the_providers_error_code_and_message_are_read(
    code: int, answer: Any, expected: tuple[str, str] | None
) -> None:
    """`error.code`/`error.message`, error envelopes and Anthropic's `type` are the
    provider's own account of a failure."""
    found = provider_error(spec("google-lro"), code, body(answer))
    if expected is None:
        found = provider_error(spec("openai-batch-example"), code, body(answer))
        assert found == {"code": "e1", "message": "m1"}
        return
    assert found is not None and (found["code"], found["message"]) == expected


def test_a_list_of_errors_is_counted() -> None:
    """`errors[]`: the first error is named and the number of them kept."""
    answer = {"errors": [{"code": "a", "message": "first"}, {"code": "b", "message": "second"}]}
    found = provider_error(spec("openai-batch-example"), 200, body(answer))
    assert found == {"code": "a", "message": "first", "count": 2}


def test_a_list_filtered_by_our_reference_keeps_only_our_job() -> None:
    """`match`: the provider lists every batch; only the one holding our reference counts."""
    openai = spec("openai-batch-example")
    assert openai.listing is not None
    listed = {
        "data": [
            {"id": "batch_a", "metadata": {"jobtrail_ref": "op_other"}},
            {"id": "batch_b", "metadata": {"jobtrail_ref": "op_1"}},
            {"id": "batch_c"},
        ]
    }
    out = parse_list(openai.listing, openai, 200, {}, body(listed), reference="op_1")
    assert isinstance(out, o.Found) and out.job_ids == ("batch_b",)
    none = parse_list(openai.listing, openai, 200, {}, body(listed), reference="op_2")
    assert isinstance(none, o.Found) and none.job_ids == ()


def test_json_lines_results_count_items_by_custom_id() -> None:
    """A JSON Lines batch result: one item per line, outcomes read at dotted paths, failed
    items named by their `custom_id`."""
    lines = [
        {"custom_id": "r1", "response": {"status_code": 200}, "error": None},
        {"custom_id": "r2", "response": {"status_code": 400}, "error": None},
        {"custom_id": "r3", "response": None, "error": {"code": "x", "message": "y"}},
    ]
    content = "\n".join(json.dumps(line) for line in lines).encode() + b"\n"
    rules = Rules(item_status="response.status_code", item_ref="custom_id", item_success=("200",))
    rules = Rules(**{**rules.__dict__, "jsonl": True})
    summary = validate(
        Candidate(content=content, content_type="application/octet-stream"), rules, None
    )
    assert summary.valid and summary.records == 3 and summary.items is not None
    assert (summary.items.succeeded, summary.items.failed_refs) == (1, ("r2", "r3"))
    broken = validate(Candidate(content=b"{}\nnot json\n", content_type=None), rules, None)
    assert not broken.valid and "line 2" in broken.problems[0]


def test_provider_check_names_the_conventions_and_what_they_promise() -> None:
    """`provider check` says which conventions a file uses and why at-most-once is (or is
    not) provable with them."""
    from jobtrail.providers.check import check_lines as guarantees

    arm = dict(guarantees(spec("azure-arm-put")))
    assert arm["job identity"] == "the URL the create was sent to"
    assert "header Azure-AsyncOperation" in arm["status URL"]
    assert "202 = still running" in arm["create answers"] and "204 = done" in arm["create answers"]
    assert "no state at all: 200 = succeeded, 201 = running" in arm["create answers"]
    assert "idempotent by nature" in arm["reconciliation note"]
    assert arm["at-most-once create"].startswith("provable")
    location = arm["monitor named by location"]
    assert "200 = done (a failure its body states aside)" in location
    google = dict(guarantees(spec("google-lro")))
    assert "`done` true ends it" in google["state"] and "1 = cancelled" in google["state"]
    assert google["idempotency"] == "token sent in query parameter requestId"
    assert "`response` of the final status answer" in google["result"]
    openai = dict(guarantees(spec("openai-batch-example")))
    assert "`output_file_id` or `error_file_id`" in openai["result"]
    assert "JSON Lines" in openai["result"]
    assert "proves a job absent only if the list reaches back" in openai["reconciliation note"]
    assert openai["client reference"] == "operation id sent in body field metadata.jobtrail_ref"
    anthropic = dict(guarantees(spec("anthropic-batch-example")))
    assert anthropic["at-most-once create"].startswith("cannot be proven")
    assert "never resubmits it on its own" in anthropic["at-most-once create"]
    assert "GET the URL in `results_url`" in anthropic["result"]


_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=12)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)
_answers = st.fixed_dictionaries(
    {},
    optional={
        key: _values
        for key in ("status", "properties", "done", "error", "errors", "response", "name", "id")
    },
)
_headers = st.dictionaries(
    st.sampled_from(["Location", "Azure-AsyncOperation", "Operation-Location", "Retry-After"]),
    st.text(max_size=40),
    max_size=3,
)


@settings(max_examples=300, deadline=None)
@given(
    name=st.sampled_from(sorted(examples())),
    code=st.sampled_from([200, 201, 202, 204, 400, 404, 500]),
    headers=_headers,
    answer=_answers | _values,
    raw=st.booleans(),
)
def test_convention_readers_return_an_outcome_for_any_answer(
    name: str, code: int, headers: dict[str, str], answer: Any, raw: bool
) -> None:
    """Whatever a provider sends, every convention spec reads it into a typed outcome and
    a provider error is a small record or nothing, never an exception."""
    read = spec(name)
    content = body(answer) if raw else b""
    create = parse_create(read, code, headers, content)
    assert isinstance(create, o.Accepted | o.SyncResult | o.Ambiguous | o.Rejected | o.Throttled)
    if isinstance(create, o.Accepted) and "://" in create.job_id:
        assert create.job_id.startswith(read.base_url)
    status = parse_status(read, code, headers, content)
    assert isinstance(status, o.Observed | o.Ambiguous | o.Rejected | o.Throttled)
    found = provider_error(read, code, content)
    assert found is None or set(found) <= {"code", "message", "count"}


def test_a_status_answer_may_move_its_monitor() -> None:
    """A 202 naming a new Location (declared in `follow`) says where the next read goes."""
    out = parse_status(spec("azure-arm-put"), 202, {"Location": f"{ARM}/loc/2"}, b"")
    assert isinstance(out, o.Observed) and out.status_url == f"{ARM}/loc/2"
    plain = parse_status(spec("azure-ai"), 200, {"Location": "x"}, body({"status": "running"}))
    assert isinstance(plain, o.Observed) and plain.status_url is None


def test_a_declared_non_2xx_create_code_is_an_outcome() -> None:
    """An idempotent DELETE may declare 404 as done (already gone); undeclared, a 404 stays
    a refusal."""
    doc = arm_reading()
    doc["create"] |= {"method": "DELETE", "codes": {"404": "succeeded"}}
    gone = parse_create(
        parse_provider(doc), 404, {}, body({"error": {"code": "NotFound"}}), PUT_URL
    )
    assert isinstance(gone, o.Accepted) and gone.remote_status is RemoteStatus.SUCCEEDED
    refused = parse_create(spec("azure-arm-put"), 404, {}, b"", PUT_URL)
    assert isinstance(refused, o.Rejected)


def test_a_list_of_resource_names_is_read_when_jobs_are_named_so() -> None:
    """Gemini lists its batches by name (`batches/123`), matched on the display name that
    holds our reference; a name with a `..` segment is unreadable."""
    doc = examples()["google-lro"]
    doc["create"]["client_reference"] = {"field": "batch.displayName"}
    doc["reconcile"] = {
        "list": {
            "path": "/v1/batches",
            "items": "operations",
            "job_id": "name",
            "match": "metadata.displayName",
        }
    }
    gemini = parse_provider(doc)
    assert gemini.listing is not None
    listed = {"operations": [{"name": "batches/9", "metadata": {"displayName": "op_1"}}]}
    out = parse_list(gemini.listing, gemini, 200, {}, body(listed), reference="op_1")
    assert isinstance(out, o.Found) and out.job_ids == ("batches/9",)
    listed["operations"][0]["name"] = "batches/../x"
    bad = parse_list(gemini.listing, gemini, 200, {}, body(listed), reference="op_1")
    assert isinstance(bad, o.Ambiguous)


def test_provider_check_names_request_ids_path_values_and_partial_results() -> None:
    """`provider check` tells the request ids, the path values asked at submit, the merged
    and partial batch results, and a cancelled count."""
    from jobtrail.profiles import shipped_profile
    from jobtrail.providers.check import check_lines as guarantees
    from jobtrail.providers.file.config import load_provider_text

    def said(name: str, edit: tuple[str, str] = ("", "")) -> dict[str, str]:
        profile = shipped_profile(name)
        assert profile is not None
        return dict(guarantees(load_provider_text(profile.text.replace(*edit), name)))

    arm = said("azure-arm-put", ('path = ""', 'path = "/g/{group}/w/{name}"'))
    assert arm["path values"].startswith("{group}, {name} given at submit")
    assert (
        "x-ms-request-id" in arm["request ids"] and "x-ms-client-request-id" in arm["request ids"]
    )
    openai = said("openai-batch")
    assert "`output_file_id` and `error_file_id`" in openai["result"]
    assert "partial result is collected" in openai["result"]
    assert "`request_counts.canceled` above zero = cancelled" in said("anthropic-batch")["state"]
    assert "UUID" in said("google-lro")["idempotency"]


def test_a_location_monitor_is_read_by_its_own_rule() -> None:
    """With the header that named the status URL, a Location monitor's 200 with no body is
    done (LRODelete200: its code says so), and a body stating Failed says how it ended; the
    same empty answer from a monitor named otherwise states nothing. The Location monitor's
    final answer is kept as the result, as read (azure-core's LocationPolling asks no more:
    LROPut202Retry200's resource URL has nothing to GET); an Azure-AsyncOperation monitor's
    is not (the PUT's result is then the resource, read at its URL)."""
    arm = spec("azure-arm-put")
    done = judge(parse_status(arm, 200, {}, b"", "location"))
    assert isinstance(done, o.Observed) and done.remote_status is RemoteStatus.SUCCEEDED
    assert done.content == b"null"
    failed = {"id": "x", "properties": {"provisioningState": "Failed"}}
    ended = judge(parse_status(arm, 200, {}, body(failed), "Location"))
    assert isinstance(ended, o.Observed) and ended.remote_status is RemoteStatus.FAILED
    running = parse_status(arm, 202, {"Location": f"{ARM}/loc/2"}, b"", "Location")
    assert isinstance(running, o.Observed) and running.status_via == "Location"
    assert isinstance(judge(parse_status(arm, 200, {}, b"", "Azure-AsyncOperation")), o.Ambiguous)
    assert isinstance(judge(parse_status(arm, 200, {}, b"")), o.Ambiguous)
    monitor = parse_status(arm, 200, {}, body({"status": "Succeeded"}), "Azure-AsyncOperation")
    assert isinstance(monitor, o.Observed) and monitor.content is None


def test_the_create_answer_names_the_header_of_its_status_url() -> None:
    """status_from's header is kept with the status URL; the create URL names none."""
    arm = spec("azure-arm-put")
    headers = {"Azure-AsyncOperation": f"{ARM}/ops/1", "Location": f"{ARM}/loc/1"}
    out = parse_create(arm, 202, headers, b"", PUT_URL)
    assert isinstance(out, o.Accepted) and out.status_via == "Azure-AsyncOperation"
    running = body({"properties": {"provisioningState": "Creating"}})
    alone = parse_create(arm, 201, {}, running, PUT_URL)
    assert isinstance(alone, o.Accepted) and alone.status_via is None


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"Location": {"codes": {"200": "later"}}}, "status.by_header.Location.codes.200"),
        ({"Location": {"stat": "x"}}, "unknown key 'stat' in status.by_header.Location"),
        ({"Location": {"answer_is_result": "yes"}}, "answer_is_result must be true or false"),
        ({"Location": "body"}, "status.by_header.Location must be a table"),
    ],
)
def test_by_header_tables_are_checked(table: dict[str, Any], message: str) -> None:
    """A by_header table with an unknown key or a wrong value is refused, saying where."""
    doc = examples()["azure-arm-put"]
    doc = {**doc, "status": {**doc["status"], "by_header": table}}
    with pytest.raises(ProviderConfigError, match=re.escape(message)):
        parse_provider(doc)


def test_a_monitor_named_by_a_header_moves_only_by_that_header() -> None:
    """An Azure-AsyncOperation monitor's 202 naming itself in Location too (lros.js) does
    not turn it into a Location monitor; a Location monitor's 202 moves it on."""
    arm = spec("azure-arm-put")
    here = {"Azure-AsyncOperation": f"{ARM}/ops/1", "Location": f"{ARM}/ops/1"}
    stays = parse_status(arm, 202, here, body({"status": "Accepted"}), "Azure-AsyncOperation")
    assert isinstance(stays, o.Observed) and stays.status_url is None
    moves = parse_status(arm, 202, {"Location": f"{ARM}/loc/2"}, b"", "Location")
    assert isinstance(moves, o.Observed) and moves.status_url == f"{ARM}/loc/2"


def _reading(doc: dict[str, Any]) -> dict[str, Any]:
    """What decides how a provider file reads answers (not where its requests go)."""
    create = {k: v for k, v in doc["create"].items() if k not in ("path", "method")}
    return {
        "cookies": doc.get("cookies"),
        "create": create,
        "status": doc["status"],
        "states": doc["states"],
        "result": doc.get("result"),
        "reconcile": doc.get("reconcile"),
    }


@pytest.mark.parametrize(
    ("example", "profile"),
    [
        ("azure-arm-put", "azure-arm-put"),
        ("arm-widget", "azure-arm-put"),
        ("arm-widgets", "azure-arm-put"),
        ("azure-arm-delete", "azure-arm-delete"),
        ("azure-arm-patch", "azure-arm-patch"),
        ("azure-arm-post", "azure-arm-post"),
        ("azure-arm-post-async", "azure-arm-post-async"),
    ],
)
def test_the_docs_arm_examples_read_answers_as_the_shipped_profiles(
    example: str, profile: str
) -> None:
    """One description of each ARM operation: the docs' example and the shipped profile
    read every answer alike (they differ only in where requests go)."""
    shipped = shipped_profile(profile)
    assert shipped is not None
    assert _reading(examples()[example]) == _reading(tomllib.loads(shipped.text))


def test_missing_by_code_reads_each_code_its_own_way() -> None:
    """`missing = { "200" = "succeeded", "201" = "running" }` (azure-arm-put's create): a 201
    with no state is still running, a 200 with none has succeeded, and a code not in the
    table has no default (a 2xx of no state states nothing)."""
    from jobtrail.core.outcomes import Basis
    from jobtrail.core.states import RemoteStatus
    from jobtrail.providers.http.reading import read_state

    spec = parse_provider(examples()["azure-arm-put"])
    rule, body = spec.create_rule, {"id": "/x", "properties": {}}
    assert read_state(rule, spec.states, 201, body)[1:] == (RemoteStatus.RUNNING, Basis.DEFAULT)
    assert read_state(rule, spec.states, 200, body)[1:] == (RemoteStatus.SUCCEEDED, Basis.DEFAULT)
    assert read_state(rule, spec.states, 203, body)[1:] == (RemoteStatus.UNKNOWN, Basis.NONE)
    word = {"properties": {"provisioningState": "Failed"}}
    assert read_state(rule, spec.states, 201, word)[1:] == (RemoteStatus.FAILED, Basis.WORD)
