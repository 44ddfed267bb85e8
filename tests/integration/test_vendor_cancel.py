"""Cancel calls the provider file declares for jobs known by their URL (Azure): an action
appended to the job URL, or DELETE on it, api-version kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobtrail.core.model import AttemptKind
from jobtrail.core.states import State
from jobtrail.errors import ProviderConfigError
from jobtrail.profiles import shipped_profile
from jobtrail.providers.file.config import load_provider_text
from jobtrail.providers.http.provider import HttpProvider
from vendor_rig import vendor_rig

from factories import make_op

ARM_ACTION_CANCEL = """
[cancel]
method = "POST"
path = "{job_url}/cancel"
"""


async def test_an_arm_resource_with_a_declared_cancel_action_is_cancelled(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`POST {resource}/cancel` (as ARM deployments have) goes to the resource's own URL."""
    async with vendor_rig(
        "azure-arm-put", request.node.name, tmp_path, monkeypatch, append=ARM_ACTION_CANCEL
    ) as rig:
        rig.faults(duration_polls=50, cancel_polls=0)
        op = await rig.h.until(await rig.submit(), State.OBSERVING, State.ACCEPTED)
        await rig.h.rt.ledger.cancel(op.operation_id, actor="test", reason="not needed")
        op = await rig.finish(op)
        assert op.state is State.CANCELLED, op
        (sent,) = [c for c in rig.h.sim.vendors.calls if c.kind == "cancel"]
        resource = str(op.remote_job_id).split("/azure-arm", 1)[1].split("?")[0]
        assert (sent.method, sent.status) == ("POST", 204)
        assert sent.path == f"/azure-arm{resource}/cancel?api-version=2024-01-01"


@pytest.mark.parametrize(
    ("cancel", "expected"),
    [
        ('method = "DELETE"\npath = "{job_url}"', "DELETE {job}?api-version=2024-02-01"),
        ('path = "{job_url}:cancel"', "POST {job}:cancel?api-version=2024-02-01"),
    ],
)
def test_a_cancel_derived_from_the_job_url_keeps_its_query(
    cancel: str, expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DELETE on the job URL, or an action after its path; the api-version stays the query."""
    monkeypatch.setenv("JOBTRAIL_AZURE_AI_BASE_URL", "https://res.cognitiveservices.azure.com")
    profile = shipped_profile("azure-ai")
    assert profile is not None
    text = profile.text.replace('[cancel]\nmethod = "POST"\npath = "{job_url}:cancel"', "")
    spec = load_provider_text(f"{text}\n[cancel]\n{cancel}\n", "azure-ai")
    job = f"{spec.base_url}/translator/document/batches/b-1"
    op = make_op(remote_job_id=f"{job}?api-version=2024-02-01")
    provider = HttpProvider(spec, session=None)  # type: ignore[arg-type]
    described = provider.describe(AttemptKind.CANCEL, op)
    assert f"{described['method']} {described['url']}" == expected.format(job=job)


def test_job_url_must_start_the_path() -> None:
    """`{job_url}` elsewhere in a path, or a suffix holding a query, is refused."""
    profile = shipped_profile("azure-ai")
    assert profile is not None
    for bad in ("/x/{job_url}", "{job_url}?cancel=1"):
        text = profile.text.replace('path = "{job_url}:cancel"', f'path = "{bad}"')
        with pytest.raises(ProviderConfigError, match="job_url"):
            load_provider_text(text, "azure-ai")
