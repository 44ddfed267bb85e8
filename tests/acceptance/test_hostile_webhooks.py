"""Hostile webhook headers against `jobtrail serve` as a subprocess, over real HTTP: digits
that `str.isdigit` and `int()` accept but are not ASCII, absurdly long timestamps and raw
bytes in the id, timestamp or signature are a 401 like any bad signature, never a 500, and
change nothing in the ledger.

The serve stack (simulator, provider files, the `serve` subprocess) is the one
tests/acceptance/test_webhooks.py starts; this module gets its own instance of it.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from http.client import HTTPConnection
from urllib.parse import urlsplit

import aiohttp
import pytest
from test_webhooks import (  # the module's fixtures, used by name below
    HMAC,
    HMAC_SECRET,
    QUIET,
    SECRET,
    Stack,
    accepted_op,
    event_body,
    http,  # noqa: F401
    ledger,  # noqa: F401
    snapshot,
    stack,  # noqa: F401
)

from jobtrail.ledger import Ledger
from jobtrail.simulator import WebhookSigner

SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
ARABIC_INDIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")
FULLWIDTH = str.maketrans("0123456789", "０１２３４５６７８９")


def hostile_stamps(now: int) -> Iterator[str]:
    """Timestamps a careless parser reads as `now`, or chokes on."""
    text = str(now)
    yield text.translate(SUPERSCRIPT)  # isdigit() is True, int() raises
    yield text.translate(ARABIC_INDIC)  # int() reads it as `now`
    yield text.translate(FULLWIDTH)  # int() reads it as `now`
    yield text[:4] + text[4:].translate(ARABIC_INDIC)  # mixed scripts
    yield "¹²³"
    yield "+" + text
    yield text + ".0"
    yield "9" * 4000  # absurdly long
    yield "0" * 20 + text  # leading zeros past the digit limit


async def post(
    session: aiohttp.ClientSession,
    served: Stack,
    provider: str,
    headers: dict[str, str],
    body: bytes,
) -> tuple[int, str]:
    url = f"{served.url}/webhooks/{provider}"
    async with session.post(url, data=body, headers=headers) as r:
        return r.status, await r.text()


def raw_post(served: Stack, provider: str, headers: dict[str, bytes], body: bytes) -> int:
    """POST with header values sent as raw bytes (aiohttp only sends text)."""
    parts = urlsplit(served.url)
    conn = HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    try:
        conn.putrequest("POST", f"/webhooks/{provider}")
        for name, value in headers.items():
            conn.putheader(name, value)
        conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        return conn.getresponse().status
    finally:
        conn.close()


def refused(status: int, text: str) -> bool:
    if status != 401:
        return False
    return json.loads(text)["error"] in ("bad_signature", "unsigned", "stale_timestamp")


async def test_non_ascii_digits_in_a_standard_timestamp_are_a_401(
    stack: Stack,  # noqa: F811
    ledger: Ledger,  # noqa: F811
    http: aiohttp.ClientSession,  # noqa: F811
) -> None:
    """`webhook-timestamp` written in superscript, Arabic-Indic or fullwidth digits, with a
    sign, a fraction or 4000 digits: each delivery is refused with 401 and nothing is
    recorded, even when the signature was made over the ASCII form of the same time."""
    op = await accepted_op(ledger, stack, QUIET)
    assert op.remote_job_id is not None
    before = await snapshot(ledger, stack, op)
    now = int(time.time())
    for stamp in hostile_stamps(now):
        body = event_body(op.remote_job_id, "succeeded")
        headers = WebhookSigner(SECRET).headers(json.loads(body)["id"], body, ts=now)
        headers["webhook-timestamp"] = stamp
        status, text = await post(http, stack, "simulator-webhooks", headers, body)
        assert refused(status, text), (stamp[:20], status, text)
    assert await snapshot(ledger, stack, op) == before


async def test_non_ascii_digits_in_an_hmac_timestamp_or_signature_are_a_401(
    stack: Stack,  # noqa: F811
    ledger: Ledger,  # noqa: F811
    http: aiohttp.ClientSession,  # noqa: F811
) -> None:
    """The HMAC scheme under its own header names: the same timestamps, and a signature
    whose hex is written in other digits, are each a 401 with nothing recorded."""
    op = await accepted_op(ledger, stack, QUIET, provider=HMAC)
    assert op.remote_job_id is not None
    before = await snapshot(ledger, stack, op)
    now = int(time.time())
    body = event_body(op.remote_job_id, "running")
    sent = WebhookSigner(HMAC_SECRET, "hmac").headers("ignored", body, ts=now)
    good = {"X-Sim-Time": sent["X-Webhook-Timestamp"], "X-Sim-Signature": "", **sent}
    good["X-Sim-Signature"] = good.pop("X-Webhook-Signature")
    del good["X-Webhook-Timestamp"]
    for stamp in hostile_stamps(now):
        status, text = await post(http, stack, HMAC, good | {"X-Sim-Time": stamp}, body)
        assert refused(status, text), (stamp[:20], status, text)
    digest = good["X-Sim-Signature"].partition("=")[2]
    for signature in (
        "sha256=" + digest.translate(ARABIC_INDIC),
        "sha256=" + digest.translate(FULLWIDTH),
        "ｓｈａ２５６=" + digest,
        "sha256=" + digest + "\u00a0",
    ):
        status, text = await post(http, stack, HMAC, good | {"X-Sim-Signature": signature}, body)
        assert refused(status, text), (signature, status, text)
    assert await snapshot(ledger, stack, op) == before


@pytest.mark.parametrize("header", ["webhook-id", "webhook-timestamp", "webhook-signature"])
async def test_raw_bytes_in_a_standard_header_are_a_401(
    stack: Stack,  # noqa: F811
    ledger: Ledger,  # noqa: F811
    header: str,
) -> None:
    """A header value that is not UTF-8 at all (raw 0xff bytes) is a 401, never a 500."""
    op = await accepted_op(ledger, stack, QUIET)
    assert op.remote_job_id is not None
    before = await snapshot(ledger, stack, op)
    body = event_body(op.remote_job_id, "succeeded")
    signed = WebhookSigner(SECRET).headers(json.loads(body)["id"], body)
    headers = {k: v.encode() for k, v in signed.items()}
    headers[header] = headers[header] + b"\xff\xfe"
    status = await asyncio.to_thread(raw_post, stack, "simulator-webhooks", headers, body)
    assert status == 401
    assert await snapshot(ledger, stack, op) == before
