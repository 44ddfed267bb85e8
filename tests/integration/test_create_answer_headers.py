"""The create attempt records every answer header the core then acts on: an ARM create
answer's `Azure-AsyncOperation` and `Location` monitors and its `Retry-After` are read back
from the ledger, exactly as the provider sent them (against the simulator's azure-arm mode
over loopback HTTP, with the shipped profiles)."""

from __future__ import annotations

import pytest

from jobtrail.core.lookup import header
from jobtrail.core.model import AttemptKind
from vendor_rig import Rig, shipped_rig  # noqa: F401 (the fixture `rig`)


@pytest.mark.parametrize("rig", ["azure-arm-put", "azure-arm-post-async"], indirect=True)
async def test_the_create_attempt_keeps_the_monitor_headers_it_follows(rig: Rig) -> None:
    """Both monitors and the Retry-After are in the create attempt's recorded answer, and
    the status URL the operation follows is the one the recorded header names."""
    rig.faults(create_status=201, headers="both", duration_polls=1)
    op = await rig.submit()
    await rig.h.tick()  # the create, answered
    attempts = await rig.h.rt.ledger.store.attempts(op.operation_id)
    create = [a for a in attempts if a.kind is AttemptKind.CREATE]
    assert len(create) == 1 and isinstance(create[0].detail, dict), create
    kept = create[0].detail["headers"]
    monitor = header(kept, "Azure-AsyncOperation")
    assert monitor and "/operationStatuses/" in monitor, kept
    assert header(kept, "Location") and header(kept, "Retry-After") is not None, kept
    followed = await rig.h.op(op)
    assert followed.status_url == monitor
