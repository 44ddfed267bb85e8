"""Fuzzing the answer parsers: whatever a provider sends, we get a typed outcome."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from jobtrail.core import outcomes as o
from jobtrail.providers.file.config import parse_provider
from jobtrail.providers.http import lookup, parse

ROOT = Path(__file__).resolve().parents[2]
SPEC = parse_provider(tomllib.loads((ROOT / "providers" / "simulator.toml").read_text()))
assert SPEC.listing is not None
LISTING = SPEC.listing

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
shaped = st.fixed_dictionaries(
    {},
    optional={
        "job_id": values,
        "state": values,
        "status_url": values,
        "progress": values,
        "updated_at": values,
        "data": values,
        "message": values,
    },
)
bodies = st.one_of(
    st.binary(max_size=200),
    values.map(lambda v: json.dumps(v).encode()),
    shaped.map(lambda v: json.dumps(v).encode()),
)
statuses = st.sampled_from([200, 201, 202, 204, 301, 400, 404, 408, 409, 410, 422, 429, 500, 503])
headers = st.dictionaries(
    st.sampled_from(
        ["Retry-After", "Location", "Operation-Location", "X-Request-ID", "Content-Type"]
    ),
    st.text(max_size=30),
    max_size=3,
)


@settings(max_examples=400)
@given(statuses, headers, bodies)
def test_create_answers_always_parse_to_an_outcome(status: int, head: Any, body: bytes) -> None:
    """Any create answer is accepted, a sync result, rejected, ambiguous or throttled."""
    outcome = parse.parse_create(SPEC, status, head, body)
    assert isinstance(outcome, o.Accepted | o.SyncResult | o.Rejected | o.Ambiguous | o.Throttled)
    if isinstance(outcome, o.Accepted):
        assert 200 <= status < 300 and isinstance(outcome.job_id, str) and outcome.job_id
    if 200 <= status < 300:
        assert not isinstance(outcome, o.Rejected)  # an unreadable 2xx is never a refusal


@settings(max_examples=400)
@given(statuses, headers, bodies)
def test_status_and_lookup_answers_always_parse(status: int, head: Any, body: bytes) -> None:
    """Status and lookup answers never raise, whatever their shape."""
    seen = parse.parse_status(SPEC, status, head, body)
    assert isinstance(seen, o.Observed | o.Rejected | o.Ambiguous | o.Throttled)
    found = lookup.parse_list(LISTING, SPEC, status, head, body)
    assert isinstance(found, o.Found | o.Rejected | o.Ambiguous | o.Throttled)
    if isinstance(found, o.Found):
        assert all(isinstance(job, str) for job in found.job_ids)


def test_malformed_answers_get_clear_reasons() -> None:
    """Not JSON, missing id and wrong types each say what is wrong."""
    cases = {
        b"<html>oops</html>": "not JSON",
        b'{"state":"queued"}': "no job id",
        b'{"job_id": 12345}': "not text",
    }
    for body, reason in cases.items():
        outcome = parse.parse_create(SPEC, 202, {}, body)
        assert isinstance(outcome, o.Ambiguous) and reason in outcome.reason
