"""Credentials in a submitted request are refused before anything is stored, with a one-line
error naming the provider file's `auth`; so are connection headers and control characters."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from jobtrail.errors import InvalidInput
from jobtrail.ledger import Ledger
from jobtrail.providers.file.config import ProviderSpec, parse_provider
from jobtrail.store import open_store

from harness import SECRET, simulator_doc

CREDENTIAL_HEADERS = [
    "Authorization",
    "Proxy-Authorization",
    "Cookie",
    "X-Goog-Api-Key",
    "Private-Token",
    "X-Access-Token",
    "Ocp-Apim-Subscription-Key",
    "X-Token",
    "X-Client-Secret",
    "X-Hub-Signature",
    "X-Session-Id",
    "X-Password",
]
CONNECTION_HEADERS = [
    "Host",
    "Connection",
    "Keep-Alive",
    "Proxy-Connection",
    "TE",
    "Trailer",
    "Transfer-Encoding",
    "Upgrade",
    "Content-Length",
]


@pytest.fixture
def spec(monkeypatch: pytest.MonkeyPatch) -> ProviderSpec:
    monkeypatch.setenv("REPORTS_API_TOKEN", SECRET)
    doc = simulator_doc("http://127.0.0.1:9")
    doc["redact"] = {"fields": ["account_pin"]}
    return parse_provider(doc)


@pytest.fixture
async def ledger(tmp_path: Path) -> AsyncIterator[Ledger]:
    store = await open_store(str(tmp_path / "ledger.db"))
    yield Ledger(store)
    await store.close()


async def refused(ledger: Ledger, spec: ProviderSpec, body: Any, **headers: str) -> str:
    """The refusal's message, after checking that nothing at all was written."""
    with pytest.raises(InvalidInput) as caught:
        await ledger.submit(spec, body, headers=headers or None, actor="agent", key="k")
    assert await ledger.store.list_operations() == []
    assert await ledger.store.audit_rows() == []
    message = str(caught.value)
    assert "\n" not in message and SECRET not in message
    return message


@pytest.mark.parametrize("name", CREDENTIAL_HEADERS)
async def test_a_header_named_like_a_credential_is_refused(
    ledger: Ledger, spec: ProviderSpec, name: str
) -> None:
    """A header whose name says it carries a credential is refused, pointing at `auth`."""
    message = await refused(ledger, spec, {"a": 1}, **{name: "not-a-known-secret"})
    assert "carries a credential" in message and "`auth`" in message


async def test_a_header_or_body_value_holding_a_secret_in_use_is_refused(
    ledger: Ledger, spec: ProviderSpec
) -> None:
    """The provider's own secret is refused under any header name and anywhere in the body."""
    for headers, body in (
        ({"X-Note": SECRET}, {"a": 1}),
        ({"X-Note": f"Bearer {SECRET}"}, {"a": 1}),
        ({}, {"note": SECRET}),
        ({}, {"deep": [{"list": [f"prefix {SECRET}"]}]}),
        ({}, {SECRET: "as a key"}),
    ):
        message = await refused(ledger, spec, body, **headers)
        assert "secret" in message and "`auth`" in message, message


async def test_a_body_field_marked_sensitive_is_refused(ledger: Ledger, spec: ProviderSpec) -> None:
    """A [redact] field of the provider file (or a credential field name) cannot be stored,
    since the stored request must be resendable as it is."""
    for body in ({"account_pin": "1234"}, {"nested": {"Account_Pin": 1}}, {"password": "x"}):
        message = await refused(ledger, spec, body)
        assert "sensitive field" in message and "`auth`" in message, message


@pytest.mark.parametrize("name", CONNECTION_HEADERS)
async def test_host_and_hop_by_hop_headers_are_refused(
    ledger: Ledger, spec: ProviderSpec, name: str
) -> None:
    """Host and hop-by-hop headers belong to the connection and are refused."""
    assert "belongs to the connection" in await refused(ledger, spec, {}, **{name: "x"})


async def test_control_characters_in_header_names_or_values_are_refused(
    ledger: Ledger, spec: ProviderSpec
) -> None:
    """CR, LF and other control characters cannot split or smuggle a header."""
    for name, value in (
        ("X-Note", "a\r\nX-Injected: 1"),
        ("X-Note", "a\nb"),
        ("X-Note", "tab\there"),
        ("X-Note", "nul\x00"),
        ("X-Bad\r\nName", "v"),
        ("X Note", "v"),
    ):
        message = await refused(ledger, spec, {}, **{name: value})
        assert "control character" in message or "not a valid HTTP field name" in message


async def test_headers_jobtrail_sets_itself_are_refused(ledger: Ledger, spec: ProviderSpec) -> None:
    """The idempotency, client reference and trace headers are jobtrail's own."""
    for name in ("Idempotency-Key", "x-client-reference", "X-Trace-ID", "traceparent"):
        assert "set by jobtrail itself" in await refused(ledger, spec, {}, **{name: "x"})


async def test_a_plain_request_with_harmless_headers_is_stored_as_sent(
    ledger: Ledger, spec: ProviderSpec
) -> None:
    """The checks let an ordinary request through, unchanged."""
    body = {"account": "acct_218", "format": "csv", "note": "tokens are fine as words"}
    op = await ledger.submit(
        spec, body, headers={"X-Team": "finance", "Accept-Language": "es"}, actor="agent"
    )
    stored = await ledger.get(op.operation_id)
    assert stored.request.body == body
    assert stored.request.headers == {"X-Team": "finance", "Accept-Language": "es"}
