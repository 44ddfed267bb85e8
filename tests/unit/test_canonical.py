"""Canonical JSON and request fingerprints."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobtrail.core.canonical import canonical_json, fingerprint
from jobtrail.core.ids import idempotency_token, operation_id, trace_id
from jobtrail.errors import InvalidInput

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4)
    ),
    max_leaves=20,
)


def test_canonical_form_sorts_keys_and_drops_whitespace() -> None:
    """Key order and spacing do not change the canonical text."""
    assert canonical_json({"b": 1, "a": [1, 2, {"d": None, "c": True}]}) == (
        '{"a":[1,2,{"c":true,"d":null}],"b":1}'
    )


def test_numbers_and_unicode_are_stable() -> None:
    """1.0 and 1 are the same number; unicode is kept as UTF-8, not escaped."""
    assert canonical_json({"n": 1.0, "x": 1e21, "s": "día ✓"}) == ('{"n":1,"s":"día ✓","x":1e+21}')


@given(json_values)
def test_canonical_json_is_valid_json_of_the_same_value(value: Any) -> None:
    """The canonical text parses back to an equal value, and is a fixed point."""
    text = canonical_json(value)
    assert canonical_json(json.loads(text)) == text


@given(st.dictionaries(st.text(), st.integers(), max_size=6))
def test_fingerprint_ignores_key_order(body: dict[str, int]) -> None:
    """Reordering a body's keys never changes its fingerprint."""
    reordered = dict(reversed(list(body.items())))
    assert fingerprint("POST", "t", body) == fingerprint("post", "t", reordered)


def test_a_changed_parameter_changes_the_fingerprint() -> None:
    """Changing the date range is a different request."""
    base = {"account": "acct_218", "range": {"start": "2025-02-01", "end": "2025-02-28"}}
    changed = {"account": "acct_218", "range": {"start": "2025-02-01", "end": "2025-02-27"}}
    assert fingerprint("POST", "t", base) != fingerprint("POST", "t", changed)
    assert fingerprint("POST", "t", base).startswith("sha256:")


def test_non_json_values_are_refused() -> None:
    """NaN is not JSON: a clear error, not a silent fingerprint."""
    with pytest.raises(InvalidInput, match="NaN"):
        canonical_json({"x": float("nan")})


def test_ids_have_their_documented_shapes() -> None:
    """op_ + sortable ULID, idem_ + >=128 random bits, 32-hex W3C trace ids."""
    rand = random.Random(3)
    first = operation_id(datetime(2025, 1, 1, tzinfo=UTC), rand)
    later = operation_id(datetime(2025, 1, 2, tzinfo=UTC), rand)
    assert first.startswith("op_") and len(first) == 29 and first < later
    token = idempotency_token(rand)
    assert token.startswith("idem_") and len(token) - 5 >= 26
    trace = trace_id(rand)
    assert len(trace) == 32 and int(trace, 16) != 0 and trace != token
