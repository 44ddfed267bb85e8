"""Small response builders shared by the simulator's endpoints."""

from __future__ import annotations

import json
import time
from email.utils import formatdate
from typing import Any

from aiohttp import web

from jobtrail.simulator.faults import UNREADABLE_BODIES, Throttle

# one encoder for every answer: json.dumps(..., separators=...) builds a new one per call
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def compact_json(payload: Any) -> bytes:
    """Compact UTF-8 JSON bytes."""
    return _ENCODER.encode(payload).encode()


def json_response(status: int, payload: Any, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        status=status,
        body=compact_json(payload),
        content_type="application/json",
        headers=headers,
    )


def error(status: int, code: str, message: str, **extra: Any) -> web.Response:
    return json_response(status, {"error": code, "message": message, **extra})


def not_found(job_id: str) -> web.Response:
    return error(404, "not_found", f"no job {job_id}")


def unauthorized() -> web.Response:
    response = error(401, "unauthorized", "missing or invalid bearer token")
    response.headers["WWW-Authenticate"] = 'Bearer realm="simulator"'
    return response


def retry_after_value(retry_after: int | str) -> str:
    """Retry-After in seconds, or as an HTTP-date ~2 s ahead (the form clients forget)."""
    if retry_after == "date":
        return formatdate(time.time() + 2, usegmt=True)
    return str(retry_after)


def throttled(throttle: Throttle) -> web.Response:
    code = "rate_limited" if throttle.status == 429 else "unavailable"
    return json_response(
        throttle.status,
        {"error": code, "message": "simulated throttling"},
        {"Retry-After": retry_after_value(throttle.retry_after)},
    )


def server_error() -> web.Response:
    return error(500, "internal_error", "simulated server error")


def drop_connection(request: web.Request) -> web.Response:
    """Close the socket without an answer: the client sees a disconnect, not a status."""
    transport = request.transport
    if transport is not None:
        transport.close()
    # aiohttp's write to the closed transport fails quietly (ConnectionError is expected there)
    return web.Response(status=500)


async def unreadable(request: web.Request, body: str) -> web.StreamResponse:
    """A 200 whose body states nothing readable; `short` sends half of a body and closes the
    connection before its Content-Length is reached (a transport failure, for contrast)."""
    content = UNREADABLE_BODIES[body]
    if body != "short":
        return web.Response(status=200, body=content, content_type="application/json")
    response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    response.content_length = len(content)
    await response.prepare(request)
    await response.write(content[: len(content) // 2])
    if request.transport is not None:
        request.transport.close()
    return response
