"""SPIN checks the protocol model (model/protocol.pml) over every reachable state: the
design holds its invariants, and each weakening of it named in the model is caught, which
shows the checker can fail (model/README.md says what each proves)."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocol_model import check, require_spin


def test_design_holds_every_invariant(tmp_path: Path) -> None:
    """With every time judgment on the ledger's clock and a lookup's miss judged when it
    was sent: no second remote job, no `cancelled` or `succeeded` without the provider's
    word, no call with an effect under a lease that may have lapsed, and every move in the
    transition table, in a search that reached every state."""
    require_spin()
    verdict = check(None, tmp_path)
    assert verdict.complete, verdict.output[-2000:]
    assert verdict.errors == 0, verdict.output[-3000:]
    assert verdict.states > 100_000, "the model shrank: is it still the protocol?"


@pytest.mark.parametrize(
    ("switch", "violated"),
    [
        # create_sent_at on the settling worker's clock, the window judged on the looking
        # worker's clock (issue 36, the High break): a second remote job
        ("WORKER_CLOCKS", "assertion violated (njobs==0)"),
        # a miss judged when its answer is recorded, not when the lookup was sent (today's
        # code does both): a listing read before the window passed makes a second job too
        ("JUDGED_AT_ANSWER", "assertion violated (njobs==0)"),
        # no may_send check: a renewal acknowledged late sends under a lapsed lease
        ("NO_MAY_SEND", "assertion violated ((newest[w]&&(owner==(w+1)))&&(lease_left>1))"),
    ],
)
def test_weakened_protocol_is_caught(switch: str, violated: str, tmp_path: Path) -> None:
    """SPIN finds the counterexample the weakening allows: the checker can fail."""
    require_spin()
    verdict = check(switch, tmp_path)
    assert verdict.errors == 1, verdict.output[-3000:]
    assert violated in verdict.output, verdict.output[-3000:]
