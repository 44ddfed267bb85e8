"""Result validation: a 200 is not a validation."""

from __future__ import annotations

import hashlib
import json

from jobtrail.core.canonical import canonical_json
from jobtrail.core.validate import Candidate, Rules, validate

CSV = b"id,status,value\nitem-1,succeeded,1\nitem-2,failed,2\nitem-3,succeeded,3\n"


def test_a_good_csv_batch_is_valid_and_counts_items() -> None:
    """Content type, checksum and stated count agree: valid, with per-item outcomes."""
    candidate = Candidate(
        content=CSV,
        content_type="text/csv; charset=utf-8",
        stated_checksum=hashlib.sha256(CSV).hexdigest(),
        stated_records=3,
    )
    rules = Rules(
        content_type="text/csv", item_status="status", item_ref="id", item_success=("succeeded",)
    )
    summary = validate(candidate, rules, "/r/x")
    assert summary.valid and summary.records == 3 and summary.size == len(CSV)
    assert summary.items is not None and (summary.items.succeeded, summary.items.failed) == (2, 1)
    assert summary.items.failed_refs == ("item-2",)
    assert {"content_type", "checksum", "record_count", "items"} <= set(summary.checks)


def test_each_check_can_fail_on_its_own() -> None:
    """Wrong type, wrong checksum, wrong count and a short batch are each reported."""
    candidate = Candidate(
        content=CSV,
        content_type="application/json",
        stated_checksum="sha256:" + "0" * 64,
        stated_records=4,
    )
    summary = validate(candidate, Rules(content_type="text/csv", expected_items=5), None)
    assert not summary.valid
    text = " | ".join(summary.problems)
    assert "content type is application/json" in text and "checksum mismatch" in text


def test_csv_counts_against_the_request() -> None:
    """The request asked for 5 records; 3 came back."""
    summary = validate(
        Candidate(content=CSV, content_type="text/csv"), Rules(expected_items=5), None
    )
    assert not summary.valid and "the request asked for 5" in summary.problems[0]


def test_json_schema_and_item_path() -> None:
    """A JSON result is checked against the provider file's schema; items are found by path."""
    schema = {
        "type": "object",
        "required": ["items"],
        "properties": {"items": {"type": "array", "items": {"type": "object", "required": ["id"]}}},
    }
    good = json.dumps({"items": [{"id": "a", "status": "ok"}, {"id": "b", "status": "err"}]})
    rules = Rules(schema=schema, items_path="items", item_status="status", item_success=("ok",))
    summary = validate(
        Candidate(content=good.encode(), content_type="application/json"), rules, None
    )
    assert summary.valid and summary.records == 2
    assert summary.items is not None and summary.items.failed_refs == ("b",)
    bad = json.dumps({"items": [{"status": "ok"}]}).encode()
    broken = validate(Candidate(content=bad, content_type="application/json"), rules, None)
    assert not broken.valid and "schema: at items/0" in broken.problems[0]


def test_checksum_in_a_body_field() -> None:
    """A checksum field covers the canonical JSON of the rest of the document."""
    rest = {"rows": [1, 2, 3]}
    digest = hashlib.sha256(canonical_json(rest).encode()).hexdigest()
    body = json.dumps(rest | {"sha256": digest}).encode()
    rules = Rules(checksum_field="sha256")
    assert validate(Candidate(content=body, content_type="application/json"), rules, None).valid
    forged = json.dumps({"rows": [1, 2], "sha256": digest}).encode()
    summary = validate(Candidate(content=forged, content_type="application/json"), rules, None)
    assert not summary.valid and "sha256" in summary.problems[0]


def test_unreadable_content_is_a_problem_not_a_crash() -> None:
    """Bytes that are not UTF-8, or not JSON, are reported."""
    assert not validate(
        Candidate(content=b"\xff\xfe", content_type="text/csv"), Rules(), None
    ).valid
    assert not validate(
        Candidate(content=b"{", content_type="application/json"), Rules(), None
    ).valid
