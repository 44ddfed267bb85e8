"""An aiohttp that can no longer be kept from re-sending a request on its own is refused at
start, loudly, instead of re-sending silently (providers/transport.py)."""

from __future__ import annotations

import aiohttp
import pytest

from jobtrail.errors import TransportUnsafe
from jobtrail.providers.registry import ProviderRegistry
from jobtrail.providers.transport import check_transport, provider_session, single_shot


def without_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    attrs = frozenset(aiohttp.ClientSession.ATTRS) - {"_retry_connection"}
    monkeypatch.setattr(aiohttp.ClientSession, "ATTRS", attrs)


def test_an_aiohttp_without_the_switch_is_refused_at_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No `_retry_connection`: the check, and the provider registry every runtime builds at
    start, raise an error that says why nothing is sent."""
    without_switch(monkeypatch)
    with pytest.raises(TransportUnsafe, match="re-sending a request on its own"):
        check_transport()
    with pytest.raises(TransportUnsafe):
        ProviderRegistry()


async def test_a_session_without_the_switch_is_never_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A session whose aiohttp dropped the attribute is refused, not used as it is."""
    session = aiohttp.ClientSession()
    try:
        without_switch(monkeypatch)
        with pytest.raises(TransportUnsafe):
            single_shot(session)
    finally:
        await session.close()


async def test_the_provider_session_does_not_resend() -> None:
    """The session of every HTTP provider call has aiohttp's own re-send turned off."""
    session = provider_session(2)
    try:
        assert session._retry_connection is False
    finally:
        await session.close()


def test_the_aws_client_config_has_no_retries_and_a_single_shot_session() -> None:
    """botocore sends each AWS call once, on a session that does not re-send either."""
    pytest.importorskip("aiobotocore")
    from jobtrail.providers.aws.calls import AwsCalls, AwsSettings
    from jobtrail.providers.transport import aws_session_class

    calls = AwsCalls("bedrock", AwsSettings(region="us-east-1"))
    assert calls.config.retries == {"total_max_attempts": 1, "mode": "standard"}
    assert calls.config.http_session_cls is aws_session_class()
