"""The shipped Azure Resource Manager profiles read a Location monitor as ARM RPC says:
202 runs, any other 2xx is done, even a 200 with no body (lros.js LRODelete200)."""

from __future__ import annotations

import tomllib

import pytest

from jobtrail.core import outcomes as o
from jobtrail.core.evidence import judge
from jobtrail.core.states import RemoteStatus
from jobtrail.profiles import shipped_profile
from jobtrail.providers.file.config import parse_provider
from jobtrail.providers.http.parse import parse_create, parse_status

ARM_PROFILES = ("azure-arm-put", "azure-arm-patch", "azure-arm-post", "azure-arm-post-async")


@pytest.mark.parametrize("name", [*ARM_PROFILES, "azure-arm-delete"])
def test_a_location_monitors_empty_200_is_done(name: str) -> None:
    """A 200 with no body from a Location monitor is done; from an Azure-AsyncOperation
    monitor it states nothing, and is not read as done."""
    profile = shipped_profile(name)
    assert profile is not None
    spec = parse_provider(tomllib.loads(profile.text))
    done = parse_status(spec, 200, {}, b"", "Location")
    assert isinstance(done, o.Observed) and done.remote_status is RemoteStatus.SUCCEEDED
    assert isinstance(judge(parse_status(spec, 200, {}, b"", "Azure-AsyncOperation")), o.Ambiguous)
    running = parse_status(spec, 202, {}, b"", "Location")
    assert isinstance(running, o.Observed) and running.remote_status is RemoteStatus.RUNNING


def test_a_post_actions_empty_done_answer_is_a_null_result_it_may_have() -> None:
    """azure-arm-post keeps the Location monitor's done answer as the result: a 200 with no
    body is an action done with no content (JSON null, declared allowed); a 200 whose body
    is `null` states nothing and is no result at all."""
    profile = shipped_profile("azure-arm-post")
    assert profile is not None
    spec = parse_provider(tomllib.loads(profile.text))
    done = judge(parse_status(spec, 200, {}, b"", "Location"))
    assert isinstance(done, o.Observed) and done.content == b"null"
    assert spec.capabilities.empty_result
    assert isinstance(judge(parse_status(spec, 200, {}, b"null", "Location")), o.Ambiguous)


MONITOR = (
    "https://management.azure.com/subscriptions/s/providers/NS/locations/w/operationStatuses/1"
)
RESOURCE = (
    "https://management.azure.com/subscriptions/s/resourceGroups/g/providers/NS/t/w?api-version=1"
)


@pytest.mark.parametrize("name", ARM_PROFILES)
@pytest.mark.parametrize("header", ["Azure-AsyncOperation", "Location"])
@pytest.mark.parametrize("code", [200, 201])
def test_a_create_answer_naming_a_monitor_without_a_state_is_running(
    name: str, header: str, code: int
) -> None:
    """azure-core: a 200/201 that names a monitor is in progress; the declared `missing`
    claims no end there, and the monitor is the next place asked."""
    profile = shipped_profile(name)
    assert profile is not None
    spec = parse_provider(tomllib.loads(profile.text))
    body = b'{"id": "/w", "name": "w", "properties": {"size": 3}}'
    read = judge(parse_create(spec, code, {header: MONITOR}, body, RESOURCE))
    assert isinstance(read, o.Accepted), read
    assert not read.remote_status.terminal, read.remote_status
    assert (read.status_url, read.status_via) == (MONITOR, header)
    stated = b'{"id": "/w", "properties": {"provisioningState": "Succeeded"}}'
    done = judge(parse_create(spec, code, {header: MONITOR}, stated, RESOURCE))
    assert not isinstance(done, o.Accepted) or done.remote_status is RemoteStatus.SUCCEEDED
