"""A NUL in a provider's words (issue 19): PostgreSQL text cannot hold U+0000, so a status
`"state": "run\\u0000ning"` once made every status read fail to commit. Against the simulator
over loopback, a real ledger of each kind and the real worker, such words are recorded the
same way on both stores: U+FFFD in text fields, exactly in JSON documents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jobtrail.core.states import State
from jobtrail.simulator.faults import with_nul

from harness import harness

REPLACED = "\ufffd"


def _nul_words(doc: dict[str, Any]) -> None:
    """The provider file maps the simulator's NUL-bearing state words to their meaning."""
    for word in ("queued", "running", "succeeded", "failed"):
        doc["states"][with_nul(word)] = doc["states"][word]


@pytest.mark.parametrize("outcome", ["succeeded", "failed"])
async def test_a_nul_in_provider_words_is_recorded_on_every_store(
    store_kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, outcome: str
) -> None:
    """Status reads whose state word, progress note and error message hold a NUL are
    recorded: the operation ends in the provider's outcome with its whole timeline, the
    state word reads back with U+FFFD in the NUL's place, the progress document keeps the
    NUL exactly, the repeated reads fold into one run, and the audit chain replays."""
    async with harness(tmp_path, monkeypatch=monkeypatch, kind=store_kind, edit=_nul_words) as rig:
        op = await rig.submit({"account": "a", "_sim": {"nul_text": True, "outcome": outcome}})
        await rig.run()
        op = await rig.op(op)
        assert op.state is State(outcome), await rig.path(op)
        path = await rig.path(op)
        assert path[0] is State.CREATE_PENDING and State.OBSERVING in path
        assert op.remote_state == with_nul(outcome).replace("\x00", REPLACED)
        store = rig.rt.ledger.store
        seen = await store.observations(op.operation_id)
        assert seen and all("\x00" not in (ob.remote_state or "") for ob in seen)
        assert {ob.remote_state for ob in seen} >= {with_nul("running").replace("\x00", REPLACED)}
        assert any((ob.progress or {}).get("note") == with_nul("progress") for ob in seen)
        # polls of an unchanged word fold: no more runs than distinct words seen
        assert len(seen) <= len({ob.remote_state for ob in seen}) + 1
        if outcome == "failed":
            causes = [t.cause for t in await rig.history(op) if t.to_state is State.FAILED]
            assert causes and "\x00" not in causes[0]
        assert await rig.rt.ledger.forged_operations() == []
