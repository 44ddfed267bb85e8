"""How long a takeover can take after a worker dies mid-call (the effect lease), and what
`provider check` and `submit` say when a create deadline is shorter (core/proof.py)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from jobtrail.core.leases import effect_lease
from jobtrail.core.proof import takeover_rule

from factories import FULL


def test_the_effect_lease_outlasts_twice_the_call_timeout_whatever_the_lease() -> None:
    """A 10 s worker lease still holds a 30 s call for 61 s; a longer one holds it longer."""
    assert effect_lease(10.0, 30.0) == 61.0
    assert effect_lease(120.0, 30.0) == 120.0


def test_a_create_deadline_shorter_than_the_takeover_is_said() -> None:
    """1 minute against 61 s: a lookup past the deadline is promised, never a resend."""
    said = takeover_rule(FULL, timedelta(minutes=1), timedelta(seconds=30))
    assert said is not None and "at least 1m1s" in said and "looked up once" in said
    assert "never sent again" in said
    assert takeover_rule(FULL, timedelta(seconds=61), timedelta(seconds=30)) is None


def test_without_a_lookup_the_takeover_goes_to_a_person() -> None:
    """A provider with no lookup has nothing to look with: a person decides at takeover."""
    caps = replace(FULL, list_by_reference=False, status_by_client_id=False)
    said = takeover_rule(caps, timedelta(seconds=30), timedelta(seconds=30))
    assert said is not None and "left to a person" in said
