"""A provider author is not misled: what a file declares is what jobtrail does, or the file is
refused with advice that fits it (issue 35's trial of a small PUT API written from the docs)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from jobtrail.core import outcomes as o
from jobtrail.core.validate import Candidate, Rules, validate
from jobtrail.errors import ProviderConfigError
from jobtrail.providers.file.config import parse_provider
from jobtrail.providers.file.promises import convention_lines, status_url_order
from jobtrail.providers.http.parse import parse_create
from jobtrail.providers.http.reading import error_text

BASE = "https://things.example"
PUT: dict[str, Any] = {
    "name": "things",
    "base_url": BASE,
    "create": {"method": "PUT", "path": "/things/{operation_id}", "job_id": "id"},
    "status": {"path": "/things/{job_id}", "state": "status"},
    "states": {"running": "running", "done": "succeeded"},
}


def doc(**sections: dict[str, Any]) -> dict[str, Any]:
    """The PUT file with `sections` merged into its tables."""
    document = copy.deepcopy(PUT)
    for name, table in sections.items():
        document[name] = {**document.get(name, {}), **table}
    return document


def test_a_declared_status_path_is_not_replaced_by_a_location_header() -> None:
    """The create answer's Location names a monitor elsewhere; the file's [status] path wins."""
    spec = parse_provider(doc())
    answer = b'{"id": "t1", "status": "running"}'
    outcome = parse_create(spec, 201, {"Location": f"{BASE}/monitors/m1"}, answer)
    assert isinstance(outcome, o.Accepted) and outcome.status_url is None
    assert status_url_order(spec) == (
        "[status] path /things/{job_id} (no answer header or field replaces it)"
    )


def test_status_from_declared_beside_a_path_wins_and_says_so() -> None:
    """A file that lists answer headers keeps them first, and provider check says the order."""
    spec = parse_provider(doc(create={"status_from": ["header:Location"]}))
    outcome = parse_create(spec, 201, {"Location": f"{BASE}/monitors/m1"}, b'{"id": "t1"}')
    assert isinstance(outcome, o.Accepted) and outcome.status_url == f"{BASE}/monitors/m1"
    line = dict(convention_lines(spec))["status URL"]
    assert line == (
        "header Location (same origin only) in the create answer, "
        "else [status] path /things/{job_id}"
    )


def test_an_empty_status_from_is_accepted_with_a_path_and_refused_without() -> None:
    """`status_from = []` means no answer names the status URL: it needs a [status] path."""
    assert parse_provider(doc(create={"status_from": []})).status_from == ()
    document = doc(create={"status_from": []})
    del document["status"]["path"]
    with pytest.raises(ProviderConfigError, match=r"declare \[status\] path"):
        parse_provider(document)


def test_a_lookup_on_the_client_chosen_put_url_is_a_lookup_by_our_key() -> None:
    """{operation_id} in the PUT path is sent by the create, so a GET of it finds the job."""
    spec = parse_provider(
        doc(reconcile={"lookup": {"path": "/things/{operation_id}", "job_id": "id"}})
    )
    assert spec.lookup is not None and spec.lookup.path == "/things/{operation_id}"


def test_a_lookup_by_a_key_the_create_never_sends_gives_advice_that_fits() -> None:
    """The refusal names both ways to send the key: a client reference or the create path."""
    document = doc(reconcile={"lookup": {"path": "/find/{operation_id}", "job_id": "id"}})
    document["create"]["path"] = "/things"
    document["create"]["method"] = "POST"
    with pytest.raises(ProviderConfigError, match=r"or put \{operation_id\} in create\.path"):
        parse_provider(document)


def test_a_count_header_on_a_result_that_cannot_be_counted_is_refused_at_load() -> None:
    """count_header with a text/plain result could never be checked: the file is refused."""
    result = {"path": "/things/{job_id}/out", "content_type": "text/plain"}
    with pytest.raises(ProviderConfigError, match=r"result\.count_header: a text/plain"):
        parse_provider(doc(result={**result, "count_header": "X-Count"}))
    assert parse_provider(doc(result=result)).result.count_header is None


def test_a_stated_count_on_an_uncountable_result_fails_validation() -> None:
    """A record count the provider stated is checked or the result is not valid."""
    stated = Candidate(content=b"hello\n", content_type="text/plain", stated_records=3)
    summary = validate(stated, Rules(), None)
    assert not summary.valid and "record_count" in summary.checks
    assert "cannot be counted" in summary.problems[0]
    unstated = Candidate(content=b"hello\n", content_type="text/plain")
    assert validate(unstated, Rules(), None).valid


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({"code": "E42", "detail": "quota exceeded"}, {"code": "E42", "message": "quota exceeded"}),
        (
            {"error": {"code": "E42"}, "message": "quota exceeded"},
            {"code": "E42", "message": "quota exceeded"},
        ),
        ({"error": "invalid", "error_description": "bad scope"}, {"message": "bad scope"}),
        ({"error": {"code": "E1", "message": "inner"}, "message": "outer"}, None),
    ],
)
def test_a_failure_reason_keeps_the_providers_message(
    answer: dict[str, Any], expected: dict[str, Any] | None
) -> None:
    """The provider's code and its words both survive, whatever key the words are under."""
    found = error_text(answer)
    assert found is not None
    if expected is None:  # the inner account wins over the envelope's
        assert found == {"code": "E1", "message": "inner"}
    else:
        assert found.items() >= expected.items()
