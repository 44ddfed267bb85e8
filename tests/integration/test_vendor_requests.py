"""What a request to a vendor is made of: where it goes (base URL, path values) is part of
its fingerprint, and the request ids on both sides are the ones the vendor's convention names."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from jobtrail.errors import KeyConflict
from jobtrail.profiles import shipped_profile
from jobtrail.providers.config import ProviderSpec, load_provider_text

from harness import Harness, harness

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
