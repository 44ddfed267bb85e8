"""Checking an AWS Signature Version 4 request the way AWS does, with botocore's own signer.

The Bedrock mode refuses any request whose `Authorization` header is not a SigV4 signature
that botocore, given the same credentials, computes for the same request: the canonical
request is rebuilt from what arrived (method, path and query as sent, the headers named
in `SignedHeaders`, the body) and signed again at the request's own `X-Amz-Date`. botocore
is imported when a request arrives, so the simulator runs without it (`jobtrail[aws]`).
"""

from __future__ import annotations

import hmac
import re
import time
from collections.abc import Mapping
from datetime import UTC, datetime

_AUTH = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/"
    r"(?P<service>[^/]+)/aws4_request, ?SignedHeaders=(?P<signed>[a-z0-9;-]+), ?"
    r"Signature=(?P<signature>[0-9a-f]{64})$"
)
SKEW = 15 * 60  # AWS refuses a request signed further than this from its own clock


def problem(
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    service: str,
    keys: Mapping[str, str],
) -> tuple[str, str] | None:
    """(AWS error code, message) when the request is not signed right, else None."""
    found = _AUTH.match(headers.get("Authorization", ""))
    if found is None:
        return "MissingAuthenticationTokenException", "Missing or malformed SigV4 signature"
    secret = keys.get(found["key"])
    if secret is None:
        return "UnrecognizedClientException", "The security token included is invalid."
    stamp = headers.get("X-Amz-Date", "")
    if found["service"] != service or not stamp.startswith(found["date"]):
        return "InvalidSignatureException", "Credential scope does not match the request"
    try:
        signed_at = datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    except ValueError:
        return "InvalidSignatureException", "X-Amz-Date is not a SigV4 timestamp"
    if abs(signed_at.timestamp() - time.time()) > SKEW:
        return "InvalidSignatureException", "Signature expired"
    expected = _signature(method, url, headers, body, found, secret, stamp)
    if not hmac.compare_digest(expected, found["signature"]):
        return (
            "InvalidSignatureException",
            "The request signature we calculated does not match the signature you provided.",
        )
    return None


def _signature(
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes,
    found: re.Match[str],
    secret: str,
    stamp: str,
) -> str:
    from botocore.auth import S3SigV4Auth, SigV4Auth  # type: ignore[import-untyped]
    from botocore.awsrequest import AWSRequest  # type: ignore[import-untyped]
    from botocore.credentials import Credentials  # type: ignore[import-untyped]

    lowered = {k.lower(): v for k, v in headers.items()}
    signed = {name: lowered.get(name, "") for name in found["signed"].split(";")}
    request = AWSRequest(method=method, url=url, data=body, headers=signed)
    request.context["timestamp"] = stamp
    token = lowered.get("x-amz-security-token")
    signer_class = S3SigV4Auth if found["service"] == "s3" else SigV4Auth
    signer = signer_class(
        Credentials(found["key"], secret, token), found["service"], found["region"]
    )
    canonical = signer.canonical_request(request)
    return str(signer.signature(signer.string_to_sign(request, canonical), request))
