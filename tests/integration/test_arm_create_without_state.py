"""An ARM create answer that holds no provisioningState is not taken for the end where
azure-core's poller would go on asking (azure-mgmt-core's ARM polling: an answer naming an
`Azure-AsyncOperation` or `Location` monitor is in progress; without one, a 201 with no
state is in progress and the resource is read, a 200 with none has succeeded).

Against the simulator's azure-arm mode over loopback HTTP, with the shipped profiles: where
a monitor is named the job fails there, so an operation that ended at its create answer
would end `succeeded` where the service failed; where none is, the resource is read until
its state ends.
"""

from __future__ import annotations

import pytest

from jobtrail.core.states import State
from vendor_rig import Rig, shipped_rig  # noqa: F401 (the fixture `rig`)


@pytest.mark.parametrize(
    ("rig", "create_status", "headers"),
    [
        ("azure-arm-put", 201, "azure-async-operation"),
        ("azure-arm-put", 200, "location"),
        ("azure-arm-patch", 200, "azure-async-operation"),
        ("azure-arm-post", 200, "azure-async-operation"),
        ("azure-arm-post-async", 201, "both"),
    ],
    indirect=["rig"],
)
async def test_an_answer_naming_a_monitor_without_a_state_is_followed_there(
    rig: Rig, create_status: int, headers: str
) -> None:
    rig.faults(create_status=create_status, headers=headers, create_state="none", outcome="failed")
    op = await rig.finish(await rig.submit())
    assert op.state is State.FAILED, op
    assert await rig.provider_errors(op), "the monitor's reason was not recorded"
    assert rig.created() == 1


@pytest.mark.parametrize("rig", ["azure-arm-put", "azure-arm-patch"], indirect=True)
async def test_a_201_without_a_state_and_no_monitor_is_read_at_the_resource(rig: Rig) -> None:
    """The resource is still being created: it is read until its provisioningState ends,
    and the result is the resource as it then is, not the 201's body."""
    rig.faults(create_status=201, headers="none", create_state="none", duration_polls=2)
    op = await rig.finish(await rig.submit())
    assert op.state is State.SUCCEEDED, op
    words = await rig.remote_words(op)
    assert words and words[-1] == "Succeeded", words
    assert any(w in ("Creating", "Updating", "Accepted") for w in words), words
    assert op.result is not None and op.result.valid, op.result
    assert rig.created() == 1


@pytest.mark.parametrize("rig", ["azure-arm-put"], indirect=True)
async def test_a_200_without_a_state_and_no_monitor_is_done_with_the_answer(rig: Rig) -> None:
    """azure-core: a 200 with no provisioningState (and nowhere else to ask) has succeeded;
    its body is the result, and nothing more is asked."""
    rig.faults(create_status=200, headers="none", create_state="none")
    op = await rig.finish(await rig.submit())
    assert op.state is State.SUCCEEDED, op
    assert op.result is not None and op.result.valid, op.result
    assert await rig.remote_words(op) == []
