"""How a batch's end is read and what of it is kept: cancelled batches keep the requests they
finished, and results are gathered from every place the vendor puts them."""

from __future__ import annotations

import pytest

from jobtrail.core.states import State
from vendor_rig import Rig, shipped_rig  # noqa: F401 (the fixture `rig`)


def _counts(op: object) -> tuple[int, int]:
    result = getattr(op, "result", None)
    assert result is not None and result.items is not None, op
    return result.items.succeeded, result.items.failed


@pytest.mark.parametrize("rig", ["anthropic-batch"], indirect=True)
async def test_an_anthropic_batch_cancelled_with_canceled_requests_ends_cancelled(
    rig: Rig,
) -> None:
    """`ended` with request_counts.canceled > 0 after a cancel is `cancelled`, and the
    request Anthropic finished in flight is collected with its result."""
    rig.faults(duration_polls=50, cancel_polls=1, in_flight_items=2)
    op = await rig.h.until(await rig.submit(), State.OBSERVING, State.ACCEPTED)
    await rig.h.rt.ledger.cancel(op.operation_id, actor="test", reason="not needed")
    op = await rig.finish(op)
    assert op.state is State.CANCELLED, op
    assert op.result is not None and op.result.valid and op.result.location
    assert op.result.partial  # what the batch finished before it ended: never a success
    assert _counts(op) == (2, 1)
    assert "ended" in await rig.remote_words(op)


@pytest.mark.parametrize("rig", ["anthropic-batch"], indirect=True)
async def test_an_anthropic_batch_that_finished_everything_despite_a_cancel_succeeded(
    rig: Rig,
) -> None:
    """A cancel that came too late (no request canceled) leaves a `succeeded` batch."""
    rig.faults(duration_polls=50, cancel_polls=1, in_flight_items=3)
    op = await rig.h.until(await rig.submit(), State.OBSERVING, State.ACCEPTED)
    await rig.h.rt.ledger.cancel(op.operation_id, actor="test", reason="not needed")
    op = await rig.finish(op)
    assert op.state is State.SUCCEEDED, op
    assert op.result is not None and not op.result.partial  # a whole result, a success
    assert _counts(op) == (3, 0)


@pytest.mark.parametrize("rig", ["openai-batch"], indirect=True)
async def test_an_openai_result_joins_the_output_and_error_files(rig: Rig) -> None:
    """A completed batch with a failed request: both files make the result, and the
    failed request counts as a failed item, named by its custom_id."""
    rig.faults(failed_items=1)
    op = await rig.finish(await rig.submit())
    assert op.state is State.SUCCEEDED, op
    assert _counts(op) == (2, 1)
    assert op.result is not None and op.result.items is not None
    assert op.result.items.failed_refs == ("request-3",)
    assert rig.h.sim.vendor_summary(rig.mode)["calls"]["result"] == 2


@pytest.mark.parametrize("rig", ["openai-batch"], indirect=True)
async def test_an_expired_openai_batch_keeps_its_partial_results(rig: Rig) -> None:
    """An expired batch is `failed`, and the requests it finished before its window passed
    are collected: the expired ones are failed items."""
    rig.faults(outcome="cancelled", finished_before_expiry=2)  # ended unasked: expired
    op = await rig.finish(await rig.submit())
    assert op.state is State.FAILED, op
    assert "expired" in await rig.remote_words(op)
    assert op.result is not None and op.result.valid and op.result.location
    assert op.result.partial
    assert _counts(op) == (2, 1)


@pytest.mark.parametrize("rig", ["openai-batch"], indirect=True)
async def test_a_cancelled_openai_batch_keeps_the_requests_it_finished(rig: Rig) -> None:
    """After `cancelling`, `cancelled` is claimed and the finished request is collected."""
    rig.faults(duration_polls=50, cancel_polls=2, in_flight_items=1)
    op = await rig.h.until(await rig.submit(), State.OBSERVING, State.ACCEPTED)
    await rig.h.rt.ledger.cancel(op.operation_id, actor="test", reason="not needed")
    op = await rig.finish(op)
    assert op.state is State.CANCELLED, op
    assert op.result is not None and op.result.partial
    assert _counts(op) == (1, 0)


@pytest.mark.parametrize("rig", ["gemini-batch"], indirect=True)
async def test_a_gemini_batch_from_a_file_collects_its_responses_file(rig: Rig) -> None:
    """A batch built from an input file answers with `response.responsesFile`: the file is
    downloaded and its lines, matched by `key`, are the per-item outcomes."""
    rig.faults(failed_items=1)
    body = {"batch": {"inputConfig": {"fileName": "files/input-1"}}}
    op = await rig.finish(await rig.h.submit(body))
    assert op.state is State.SUCCEEDED, op
    assert op.result is not None and op.result.valid, op.result
    assert "jsonl" in op.result.checks
    assert _counts(op) == (2, 1)
    assert op.result.items is not None and op.result.items.failed_refs == ("request-3",)
    calls = [c for c in rig.h.sim.vendors.calls if c.mode == rig.mode and c.kind == "result"]
    assert [c.status for c in calls] == [200]
    assert calls[0].path.startswith("/gemini/download/v1beta/files/")
    assert calls[0].path.endswith(":download?alt=media")


@pytest.mark.parametrize("rig", ["gemini-batch"], indirect=True)
async def test_a_gemini_batch_with_inlined_requests_collects_its_inlined_responses(
    rig: Rig,
) -> None:
    """Inlined requests: the operation's `response` is the result, items by `metadata.key`."""
    rig.faults(failed_items=1)
    op = await rig.finish(await rig.submit())
    assert op.state is State.SUCCEEDED, op
    assert _counts(op) == (2, 1)
    assert op.result is not None and op.result.items is not None
    assert op.result.items.failed_refs == ("q2",)
    assert "result" not in rig.h.sim.vendor_summary(rig.mode)["calls"]
