"""Verifying a webhook delivery: a signature over the body and a timestamp inside a window.

Two schemes, chosen by `signing` in the provider file's [webhooks] table:

- "standard": Standard Webhooks. `webhook-id`, `webhook-timestamp`, `webhook-signature`
  (`v1,<base64>` entries, space separated); HMAC-SHA256 over "<id>.<timestamp>.<body>"
  with the `whsec_<base64>` secret.
- "hmac": `X-Webhook-Signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>`
  with `X-Webhook-Timestamp` (header names configurable); the raw secret is the key.

The signature covers the timestamp, so a captured delivery cannot be made fresh again: the
window is what refuses a replay sent later. Inside the window the event id deduplicates.
Signatures are compared with `hmac.compare_digest`, in constant time.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from standardwebhooks import Webhook

from jobtrail.core.lookup import header
from jobtrail.errors import JobtrailError
from jobtrail.providers.file.spec import WebhookSpec

_MAX_TIMESTAMP_DIGITS = 12
_ASCII_DIGITS = "0123456789"


class Refusal(StrEnum):
    UNSIGNED = "unsigned"  # a signature or timestamp header is absent
    BAD_SIGNATURE = "bad_signature"  # present, but unreadable or not matching
    STALE = "stale_timestamp"  # signed outside the tolerance window (a replay, or a bad clock)
    MALFORMED = "malformed"  # signed, but not an event we can read
    NOT_CONFIGURED = "not_configured"  # our side: the secret is missing or unusable


class WebhookRefused(JobtrailError):
    """A delivery was refused before anything was recorded."""

    def __init__(self, refusal: Refusal, message: str) -> None:
        super().__init__(message)
        self.refusal = refusal


@dataclass(frozen=True, kw_only=True)
class Delivery:
    """A delivery whose signature and timestamp were verified."""

    delivery_id: str | None  # the id header; signed under "standard" only
    timestamp: int
    body: bytes


def verify_delivery(
    spec: WebhookSpec,
    secret: str | None,
    headers: Mapping[str, str],
    body: bytes,
    now: datetime,
) -> Delivery:
    """The verified delivery, or WebhookRefused saying why not."""
    if not secret:
        raise WebhookRefused(
            Refusal.NOT_CONFIGURED,
            f"the webhook secret variable {spec.secret_env} is not set on this server",
        )
    if spec.signing == "standard":
        names = ("webhook-id", "webhook-timestamp", "webhook-signature")
    else:
        names = (spec.id_header, spec.timestamp_header, spec.signature_header)
    delivery_id, stamp, signature = (header(headers, name) for name in names)
    if not stamp or not signature or (spec.signing == "standard" and not delivery_id):
        needed = names if spec.signing == "standard" else names[1:]
        raise WebhookRefused(Refusal.UNSIGNED, f"a signed delivery carries {', '.join(needed)}")
    for name, value in zip(names, (delivery_id, stamp, signature), strict=True):
        # Header values are decoded with surrogate escapes; anything but printable ASCII
        # (superscript or Arabic-Indic digits, raw bytes) is a forgery, not our bug.
        if value is not None and not _printable_ascii(value):
            raise WebhookRefused(Refusal.BAD_SIGNATURE, f"the {name} header is not ASCII text")
    timestamp = _timestamp(stamp, spec, now)
    if spec.signing == "standard":
        assert delivery_id is not None
        matched = _standard_matches(secret, delivery_id, timestamp, body, signature)
    else:
        matched = _hmac_matches(secret, timestamp, body, signature)
    if not matched:
        raise WebhookRefused(Refusal.BAD_SIGNATURE, "the signature does not match the body")
    return Delivery(delivery_id=delivery_id, timestamp=timestamp, body=body)


def _timestamp(stamp: str, spec: WebhookSpec, now: datetime) -> int:
    text = stamp.strip(" \t")
    # str.isdigit and int() accept superscript and Arabic-Indic digits: check the bytes
    if not 0 < len(text) <= _MAX_TIMESTAMP_DIGITS or text.strip(_ASCII_DIGITS):
        raise WebhookRefused(Refusal.BAD_SIGNATURE, "the timestamp is not Unix seconds")
    timestamp = int(text)
    skew = abs(now.timestamp() - timestamp)
    if skew > spec.tolerance.total_seconds():
        raise WebhookRefused(
            Refusal.STALE,
            f"the delivery was signed {skew:.0f}s away from now, outside the "
            f"{spec.tolerance.total_seconds():g}s tolerance",
        )
    return timestamp


def _printable_ascii(value: str) -> bool:
    return value.isascii() and value.isprintable()


def _standard_matches(
    secret: str, delivery_id: str, timestamp: int, body: bytes, signature: str
) -> bool:
    try:
        signer = Webhook(secret)
    except Exception:  # the library raises bare errors for an unusable secret
        raise WebhookRefused(
            Refusal.NOT_CONFIGURED, "the webhook secret is not a whsec_<base64> secret"
        ) from None
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise WebhookRefused(Refusal.MALFORMED, "the body is not UTF-8 text") from None
    try:
        moment = datetime.fromtimestamp(timestamp, UTC)
    except (OverflowError, OSError, ValueError):  # only with an absurd tolerance
        raise WebhookRefused(Refusal.BAD_SIGNATURE, "the timestamp is out of range") from None
    signed = signer.sign(msg_id=delivery_id, timestamp=moment, data=text)
    expected = base64.b64decode(signed.partition(",")[2])
    matched = False
    for entry in signature.split():
        version, _, value = entry.partition(",")
        if version != "v1":
            continue
        try:
            offered = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            continue
        matched |= hmac.compare_digest(expected, offered)
    return matched


def _hmac_matches(secret: str, timestamp: int, body: bytes, signature: str) -> bool:
    scheme, _, offered = signature.strip().partition("=")
    if scheme.lower() != "sha256":
        return False
    expected = hmac.new(secret.encode("utf-8"), f"{timestamp}.".encode() + body, hashlib.sha256)
    offered_bytes = offered.strip().lower().encode("utf-8", errors="replace")
    return hmac.compare_digest(expected.hexdigest().encode("ascii"), offered_bytes)
