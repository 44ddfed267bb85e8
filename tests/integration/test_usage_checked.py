"""A provider's usage is a count (issue 36): a negative, non-finite or absurd value is
dropped, with the reason recorded on the call that reported it, so `list --json` totals never
go below zero. Through the ledger's one boundary for every provider (a code provider here),
on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import jobtrail
from jobtrail.core.usage import checked_usage
from jobtrail.presentation.facts import usage_totals
from jobtrail.testing import AttemptKind, RemoteStatus, ScriptedCall, ScriptedProvider, outcomes

from stores import fresh_ledger

REPORTED = {"requests": -1000, "tokens": 12, "credits": float("inf"), "items": 1e19}


def _reporting(call: ScriptedCall) -> outcomes.CallOutcome:
    """Accept, then report done with usage that holds one count and three non-counts."""
    if call.kind is AttemptKind.CREATE:
        return outcomes.Accepted(
            job_id=f"job-{call.operation.operation_id}",
            remote_state="queued",
            remote_status=RemoteStatus.RUNNING,
        )
    return outcomes.Observed(
        remote_state="done", remote_status=RemoteStatus.SUCCEEDED, usage=dict(REPORTED)
    )


async def test_a_negative_usage_value_is_dropped_with_its_reason_recorded(
    store_kind: str, tmp_path: Path
) -> None:
    """Two operations each reported `requests: -1000`: neither keeps it, the totals stay at
    what was counted, and the status read's record says why each value was left out."""
    provider = ScriptedProvider(_reporting)
    async with (
        fresh_ledger(store_kind, tmp_path) as db,
        jobtrail.Client(db.url, data_dir=tmp_path, providers=[provider]) as jt,
    ):
        ops = [await jt.submit("scripted", {"n": n}) for n in (1, 2)]
        done = [await jt.wait(op.operation_id, timeout=30) for op in ops]
        ledger = jt._opened.ledger
        attempts = await ledger.attempts(ops[0].operation_id)
        observations = await ledger.observations(ops[0].operation_id)
    assert [op.state for op in done] == [jobtrail.State.SUCCEEDED] * 2
    assert [op.usage for op in done] == [{"tokens": 12}] * 2
    assert observations[-1].usage == {"tokens": 12}
    assert usage_totals(done) == {"tokens": 24}
    dropped = [a.detail["usage_dropped"] for a in attempts if "usage_dropped" in a.detail]
    assert len(dropped) == 1 and sorted(dropped[0]) == ["credits", "items", "requests"]
    assert dropped[0]["requests"].startswith("negative (-1000)")


def test_a_usage_value_is_a_number_of_zero_or_more() -> None:
    """The core's rule, value by value: counts and amounts kept, anything else named."""
    kept, dropped = checked_usage({"a": 0, "b": 2.5, "c": -0.5, "d": True, "e": float("nan")})
    assert kept == {"a": 0, "b": 2.5}
    assert {name: why.split(" (")[0] for name, why in dropped.items()} == {
        "c": "negative",
        "d": "not a number: bool",
        "e": "not a finite number",
    }
    assert checked_usage({"x": -1}) == (
        None,
        {"x": "negative (-1); a usage value is a number >= 0"},
    )
