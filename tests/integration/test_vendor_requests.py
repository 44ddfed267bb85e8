"""What a request to a vendor is made of: where it goes (base URL, path values) is part of
its fingerprint, and the request ids on both sides are the ones the vendor's convention names."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from jobtrail.core.states import State
from jobtrail.errors import InvalidInput, KeyConflict
from jobtrail.profiles import shipped_profile
from jobtrail.providers.file.config import ProviderSpec, load_provider_text
from jobtrail.providers.http.placement import uuid_of
from vendor_rig import Rig, vendor_rig

from harness import SECRET, Harness, harness

ARM = "https://management.azure.com/subscriptions/s1/resourceGroups/rg1/providers/Microsoft.Sim"
ARM_BODY = {"location": "westus", "properties": {"size": 3}}


@pytest.fixture
async def h(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Harness]:
    async with harness(tmp_path, monkeypatch=monkeypatch) as opened:
        yield opened


def _profile(name: str, monkeypatch: pytest.MonkeyPatch, **env: str) -> ProviderSpec:
    for variable, value in env.items():
        monkeypatch.setenv(variable, value)
    profile = shipped_profile(name)
    assert profile is not None
    return load_provider_text(profile.text, name)


async def test_the_same_body_for_another_base_url_is_another_request(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One key, one body, two ARM resources: the second is refused, never folded into the first."""
    first = _profile("azure-arm-put", monkeypatch, JOBTRAIL_AZURE_ARM_URL=f"{ARM}/widgets/a")
    second = _profile("azure-arm-put", monkeypatch, JOBTRAIL_AZURE_ARM_URL=f"{ARM}/widgets/b")
    op = await h.rt.ledger.submit(first, ARM_BODY, key="widget", actor="test")
    with pytest.raises(KeyConflict, match="different request"):
        await h.rt.ledger.submit(second, ARM_BODY, key="widget", actor="test")
    again = await h.rt.ledger.submit(first, ARM_BODY, key="widget", actor="test")
    assert again.operation_id == op.operation_id
    assert f"{ARM}/widgets/a" in op.request.target


@pytest.fixture
async def arm(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Rig]:
    async with vendor_rig(request.param, request.node.name, tmp_path, monkeypatch) as opened:
        yield opened


@pytest.mark.parametrize("arm", ["azure-arm-put", "azure-ai"], indirect=True)
async def test_azure_request_ids_are_read_and_sent_as_azure_names_them(arm: Rig) -> None:
    """The provider's request id on record is Azure's (`x-ms-request-id`, `apim-request-id`),
    and every call carried a fresh UUID of ours in `x-ms-client-request-id`."""
    arm.faults(duration_polls=2)
    op = await arm.finish(await arm.submit())
    assert op.state is State.SUCCEEDED, op
    attempts = await arm.h.rt.ledger.store.attempts(op.operation_id)
    ours = [a.detail["client_request_id"] for a in attempts]
    theirs = [a.provider_request_id for a in attempts]
    assert len(attempts) >= 3 and len(set(ours)) == len(ours)
    assert all(uuid.UUID(value).version == 4 for value in ours)
    assert all(value is not None and uuid.UUID(value) for value in theirs), theirs
    observations = await arm.h.rt.ledger.store.observations(op.operation_id)
    assert observations and all(o.request_id in theirs for o in observations)
    sent = [c.client_request_id for c in arm.h.sim.vendors.calls if c.mode == arm.mode]
    assert set(ours) <= set(sent)


@pytest.mark.parametrize("arm", ["azure-arm-put"], indirect=True)
async def test_a_client_request_id_given_at_submit_is_sent_on_every_call(arm: Rig) -> None:
    """`x-ms-client-request-id` given with the request is the operation's: the create and
    every status and result call carry it (azure-core re-sends the create's on every poll)."""
    given = "9C4D50EE-2D56-4CD3-8152-34347DC9F2B0"
    arm.faults(duration_polls=2)
    submitted = await arm.h.submit(arm.case.body, headers={"x-ms-client-request-id": given})
    op = await arm.finish(submitted)
    assert op.state is State.SUCCEEDED, op
    attempts = await arm.h.rt.ledger.store.attempts(op.operation_id)
    assert len(attempts) >= 3
    assert {a.detail["client_request_id"] for a in attempts} == {given}
    sent = {c.client_request_id for c in arm.h.sim.vendors.calls if c.mode == arm.mode}
    assert sent == {given}


async def test_a_google_request_id_is_the_uuid4_aip_155_asks_for(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The token goes out as a UUID4 derived from it: the same on every retry of one
    operation, different for another operation."""
    spec = _profile("google-lro", monkeypatch)
    assert spec.idempotency is not None and spec.idempotency.uuid
    first = uuid_of("idem_a")
    assert uuid.UUID(first).version == 4 and first == uuid_of("idem_a") != uuid_of("idem_b")


ARM_PATH = (
    "/subscriptions/{subscription}/resourceGroups/{group}/providers/Microsoft.Sim/widgets/"
    "{name}?api-version=2024-01-01"
)


def _arm_by_name(h: Harness, monkeypatch: pytest.MonkeyPatch) -> ProviderSpec:
    """azure-arm-put with the resource named at submit, pointed at the simulator."""
    monkeypatch.setenv("AZURE_ACCESS_TOKEN", SECRET)
    monkeypatch.setenv("JOBTRAIL_AZURE_ARM_URL", f"{h.sim.base_url}/azure-arm")
    profile = shipped_profile("azure-arm-put")
    assert profile is not None
    text = profile.text.replace('path = ""', f'path = "{ARM_PATH}"')
    return load_provider_text(text, "azure-arm-put")


async def test_a_resource_named_at_submit_is_created_at_its_url(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Path values fill the create URL, percent-encoded; the job is that resource."""
    spec = _arm_by_name(h, monkeypatch)
    values = {"subscription": "s1", "group": "rg1", "name": "w 1"}
    op = await h.rt.ledger.submit(spec, ARM_BODY, path=values, key="w1", actor="test")
    assert op.request.path == values and "widgets/w 1?" in op.request.target
    await h.run()
    op = await h.op(op)
    assert op.state is State.SUCCEEDED, op
    assert str(op.remote_job_id).endswith(
        "/azure-arm/subscriptions/s1/resourceGroups/rg1/providers/Microsoft.Sim/widgets/"
        "w%201?api-version=2024-01-01"
    )
    # another resource under the same key is another request: refused, never folded
    with pytest.raises(KeyConflict, match="different request"):
        await h.rt.ledger.submit(
            spec, ARM_BODY, path={**values, "name": "w2"}, key="w1", actor="test"
        )


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"subscription": "s1", "group": "rg1", "name": "a/b"}, "splits a URL path"),
        ({"subscription": "s1", "group": "..", "name": "w"}, "URL normalization removes"),
        ({"subscription": "s1", "group": "rg1", "name": "%2e%2e"}, "URL normalization"),
        ({"subscription": "s1", "group": "rg1", "name": "w\r\nX-Evil: 1"}, "control characters"),
        ({"subscription": "s1", "group": "rg1"}, r"needs a value for \{name\}"),
        ({"subscription": "s1", "group": "rg1", "name": "w", "zone": "z"}, r"no placeholder"),
    ],
)
async def test_unsafe_or_missing_path_values_are_refused_before_anything_is_stored(
    h: Harness, monkeypatch: pytest.MonkeyPatch, values: dict[str, str], message: str
) -> None:
    """A path value is one URL path segment: `/`, `..`, CR/LF are refused, as are a missing
    or unknown placeholder; nothing is recorded."""
    spec = _arm_by_name(h, monkeypatch)
    with pytest.raises(InvalidInput, match=message):
        await h.rt.ledger.submit(spec, ARM_BODY, path=values, actor="test")
    assert await h.rt.ledger.store.list_operations(limit=10) == []


async def test_an_operation_recorded_before_targets_named_the_base_url_is_found_again(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key submitted by an older jobtrail (target `NAME:METHOD PATH`) with the same
    request still returns its operation; the same body for another base URL does not."""
    first = _profile("azure-arm-put", monkeypatch, JOBTRAIL_AZURE_ARM_URL=f"{ARM}/widgets/a")
    with monkeypatch.context() as old:
        old.setattr(ProviderSpec, "target", property(lambda s: f"{s.name}:PUT "))
        op = await h.rt.ledger.submit(first, ARM_BODY, key="old", actor="test")
    assert op.request.target == "azure-arm-put:PUT "
    again = await h.rt.ledger.submit(first, ARM_BODY, key="old", actor="test")
    assert again.operation_id == op.operation_id
    other = _profile("azure-arm-put", monkeypatch, JOBTRAIL_AZURE_ARM_URL=f"{ARM}/widgets/b")
    with pytest.raises(KeyConflict, match="different request"):
        await h.rt.ledger.submit(other, ARM_BODY, key="old", actor="test")
    with pytest.raises(KeyConflict, match="different request"):
        await h.rt.ledger.submit(first, {"location": "eastus"}, key="old", actor="test")
