"""Which credential variables are reported as unset, for HTTP and code providers."""

from __future__ import annotations

import pytest

from jobtrail.core.model import Capabilities
from jobtrail.providers.code.contract import CodeSpec
from jobtrail.providers.credentials import unset_by_provider, unset_credentials


def code(*names: str) -> CodeSpec:
    return CodeSpec(name="vendor", version="1", capabilities=Capabilities(), secret_env=names)


def test_a_code_provider_with_alternatives_is_reported_only_when_none_is_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """secret_env may list alternatives (a key, a session token): one set is enough; none
    set names them all, in one line."""
    monkeypatch.delenv("VENDOR_KEY", raising=False)
    monkeypatch.delenv("VENDOR_SESSION", raising=False)
    unset = unset_credentials(code("VENDOR_KEY", "VENDOR_SESSION"))
    assert unset is not None and unset.code
    assert "none of the environment variables VENDOR_KEY, VENDOR_SESSION is set" in (
        unset.at_start()
    )
    monkeypatch.setenv("VENDOR_KEY", "k")
    assert unset_credentials(code("VENDOR_KEY", "VENDOR_SESSION")) is None
    assert unset_credentials(code()) is None


def test_stored_code_documents_are_read_back_for_the_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The worker reads providers from stored operations: a code provider's document names
    its variable once, however many operations hold it."""
    monkeypatch.delenv("VENDOR_KEY", raising=False)
    doc = code("VENDOR_KEY").document
    (unset,) = unset_by_provider([("vendor", doc), ("vendor", doc)])
    assert unset.names == ("VENDOR_KEY",) and unset.provider == "vendor"
    assert unset.at_submit().startswith("warning: environment variable VENDOR_KEY is not set")
