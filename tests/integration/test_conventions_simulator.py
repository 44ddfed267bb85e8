"""Convention keys against the project's simulator over loopback HTTP, where it can
express them: the provider's own failure reason, state words in another case found at the
second of two paths, and a status URL whose declared order puts the body first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jobtrail.core.states import State
from jobtrail.presentation.explain import explain_text

from harness import Harness, harness


async def _explain(rig: Harness, op_id: str) -> str:
    store = rig.rt.ledger.store
    op = await rig.op(op_id)
    return explain_text(
        op,
        await store.history(op_id),
        await store.attempts(op_id),
        await store.observations(op_id),
        rig.clock.now(),
    )


async def test_a_failed_simulator_job_is_explained_with_its_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The simulator's `error.code`/`error.message` on a failed job reach `explain`."""
    async with harness(tmp_path, monkeypatch=monkeypatch) as rig:
        op = await rig.submit({"account": "a", "_sim": {"outcome": "failed"}})
        await rig.run()
        assert (await rig.op(op)).state is State.FAILED
        text = await _explain(rig, op.operation_id)
    assert "why:        the provider said job_failed: " in text


def _shouting(doc: dict[str, Any]) -> None:
    doc["states"] = {word.upper(): meaning for word, meaning in doc["states"].items()}
    doc["status"] |= {"state": ["status.word", "state"], "ignore_case": True}
    doc["create"] |= {"state": ["status.word", "state"]}
    doc["create"].pop("status_url", None)
    doc["create"]["status_from"] = ["field:status_url", "header:Location"]


async def test_words_in_another_case_at_a_later_path_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With `ignore_case`, `[states]` written in capitals still reads the simulator's
    lower-case words, found at the second declared state path; the status URL order
    declared in `status_from` is honoured."""
    async with harness(tmp_path, edit=_shouting, monkeypatch=monkeypatch) as rig:
        op = await rig.submit({"account": "a", "_sim": {"status_location": "body"}})
        await rig.run()
        op = await rig.op(op)
        assert op.state is State.SUCCEEDED
        assert op.remote_state == "succeeded"
        reads = rig.calls(op, "status")
        assert reads and {c.path for c in reads} == {f"/v1/jobs/{op.remote_job_id}"}
