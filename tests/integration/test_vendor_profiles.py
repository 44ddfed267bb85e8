"""Every shipped vendor profile runs its whole lifecycle against its simulator mode: success,
failure, cancellation and a lost create answer (never a duplicate job)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from jobtrail.core.states import State
from jobtrail.errors import JobtrailError
from jobtrail.profiles import shipped_profile
from jobtrail.providers.file.config import load_provider_text
from vendor_rig import CASES, Rig, shipped_rig, vendor_rig  # noqa: F401 (the fixture `rig`)

ALL = pytest.mark.parametrize("rig", list(CASES), indirect=True)


@ALL
async def test_success(rig: Rig) -> None:
    """A job that succeeds is collected and stored, with its per-item outcomes."""
    rig.faults(failed_items=1, retry_after=1)
    op = await rig.finish(await rig.submit())
    assert op.state is State.SUCCEEDED, op
    if not rig.case.has_result:
        # done is the terminal state itself: nothing was fetched or stored
        assert op.result is None or op.result.location is None
        return
    assert op.result is not None and op.result.valid, op.result
    if rig.case.items is not None:
        assert op.result.items is not None
        assert (op.result.items.succeeded, op.result.items.failed) == rig.case.items
    assert rig.created() == 1


@ALL
async def test_failure(rig: Rig) -> None:
    """A job the provider fails ends `failed`, with the provider's own reason on record."""
    rig.faults(outcome="failed")
    op = await rig.finish(await rig.submit())
    assert op.state is rig.case.failed_state, op
    if rig.case.failed_state is State.FAILED:
        assert await rig.provider_errors(op), "the provider's reason was not recorded"
    if rig.case.failed_items is not None:
        assert op.result is not None and op.result.items is not None
        assert (op.result.items.succeeded, op.result.items.failed) == rig.case.failed_items


@ALL
async def test_cancellation(rig: Rig) -> None:
    """A cancel is sent once and `cancelled` is claimed only once the provider says so."""
    rig.faults(duration_polls=50, cancel_polls=2)
    op = await rig.submit()
    op = await rig.h.until(op, State.OBSERVING, State.ACCEPTED)
    if not rig.case.can_cancel:
        # the profile says it cannot cancel: refused up front, nothing sent, nothing claimed
        with pytest.raises(JobtrailError, match="cancel"):
            await rig.h.rt.ledger.cancel(op.operation_id, actor="test", reason="no longer needed")
        assert "cancel" not in rig.h.sim.vendor_summary(rig.mode)["calls"]
        assert (await rig.h.op(op)).cancel_intent is None
        return
    await rig.h.rt.ledger.cancel(op.operation_id, actor="test", reason="no longer needed")
    op = await rig.finish(op)
    assert op.state is rig.case.cancelled_state, op
    assert op.cancel_intent is not None
    if rig.case.partial_after_cancel:
        # the outcome after the cancel is reported item by item: one finished, two canceled
        assert op.result is not None and op.result.valid and op.result.items is not None
        assert (op.result.items.succeeded, op.result.items.failed) == (1, 2)
    summary = rig.h.sim.vendor_summary(rig.mode)
    assert summary["calls"]["cancel"] == 1
    # sent as the vendor's reference says: method and URL (api-version included)
    (sent,) = [c for c in rig.h.sim.vendors.calls if c.mode == rig.mode and c.kind == "cancel"]
    assert re.fullmatch(rig.case.cancel_call, f"{sent.method} {sent.path}"), sent
    if rig.case.cancelling_word is not None:
        # the provider's in-between word was seen, and was not taken for the end
        assert rig.case.cancelling_word in await rig.remote_words(op)


@ALL
async def test_lost_create_answer(rig: Rig) -> None:
    """A create whose answer is lost is found again, never created twice."""
    rig.faults(drop_create_answer=1)
    op = await rig.finish(await rig.submit())
    assert op.state is rig.case.lost_state, op
    assert rig.created() == 1
    if rig.case.lost_state is State.NEEDS_HUMAN:
        # nothing can find the batch, so nothing is sent again: a person decides
        assert rig.create_calls() == 1


def _listed(profile: str) -> bool:
    shipped = shipped_profile(profile)
    return shipped is not None and load_provider_text(shipped.text, profile).listing is not None


LISTED = [name for name, case in CASES.items() if _listed(case.profile)]


@pytest.mark.parametrize("name", LISTED)
async def test_a_lost_create_answer_and_a_lagging_listing_make_one_job(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batch shows in the listing only 35 s after its create arrived (the look-alike
    that made 2 batches per operation): the lookups that miss it meanwhile prove nothing
    (the profile's visibility window has not passed), so nothing is sent again and the
    batch is found once it is listed. The simulator shares the worker's virtual clock."""
    async with vendor_rig(name, "lagging", tmp_path, monkeypatch, shared_clock=True) as rig:
        rig.faults(drop_create_answer=1, list_visible_after=35)
        op = await rig.finish(await rig.submit())
        assert op.state is State.SUCCEEDED, op
        assert rig.created() == 1 and rig.create_calls() == 1
        lookups = rig.h.sim.vendor_summary(rig.mode)["calls"].get("list", 0)
        assert lookups >= 2, "the first lookup should have missed the batch"


@ALL
async def test_not_found_just_after_create_and_a_transient_error(rig: Rig) -> None:
    """A 404 right after create (replication lag) and a 500 are waited out, not believed."""
    rig.faults(not_found_polls=1, status_errors=1, retry_after=3)
    op = await rig.finish(await rig.submit())
    assert op.state is State.SUCCEEDED, op
    assert rig.created() == 1


def test_profiles_refuse_nothing() -> None:
    """Every shipped profile loads as a valid provider file."""
    from jobtrail.profiles import profile_names

    for name in profile_names():
        profile = shipped_profile(name)
        assert profile is not None and profile.summary
        try:
            load_provider_text(profile.text, name)
        except JobtrailError as exc:  # pragma: no cover - the failure message is the point
            pytest.fail(f"{name}: {exc}")


@pytest.mark.parametrize(
    ("rig", "word"),
    [("openai-batch", "expired"), ("gemini-batch", "BATCH_STATE_EXPIRED")],
    indirect=["rig"],
)
async def test_an_expired_batch_is_a_failure(rig: Rig, word: str) -> None:
    """A batch the provider let expire (its 24 h window passed) ends `failed`, never `succeeded`."""
    rig.faults(outcome="cancelled")  # the provider ended it without being asked: expiry
    op = await rig.finish(await rig.submit())
    assert op.state is State.FAILED, op
    assert word in await rig.remote_words(op)


@pytest.mark.parametrize("rig", ["openai-batch"], indirect=True)
async def test_a_batch_whose_every_request_failed_collects_the_error_file(rig: Rig) -> None:
    """With no output file, the error file is the result: every item counted as failed."""
    rig.faults(failed_items=3)
    op = await rig.finish(await rig.submit())
    assert op.state is State.SUCCEEDED, op
    assert op.result is not None and op.result.items is not None
    assert (op.result.items.succeeded, op.result.items.failed) == (0, 3)
    assert op.result.items.failed_refs == ("request-1", "request-2", "request-3")
