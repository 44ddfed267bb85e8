"""The `echo_credentials` fault: a provider that repeats the caller's bearer token back.

The simulator learns the token from the request's Authorization header (it keeps only a
digest of the one it expects) and puts it everywhere an answer has room for text: the state
word while running, the progress document, a field of its own, the request id header, error
bodies, the status URL's query and the result's item ids. Nothing here is stored.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web


def bearer(request: web.Request) -> str:
    """The token the request carried, or "" without one."""
    header = request.headers.get("Authorization", "")
    return header.removeprefix("Bearer ").strip()


def request_id(token: str) -> dict[str, str]:
    """An X-Request-ID header that holds the token (the server stamps none over it)."""
    return {"X-Request-ID": f"req_{token}"}


def status(payload: dict[str, Any], token: str) -> dict[str, Any]:
    """A status body with the token in the state word (while running), the progress and
    fields of its own. A terminal word stays as it is, so the job can still be followed."""
    echoed = dict(payload)
    if echoed.get("state") in ("queued", "running"):
        echoed["state"] = f"{echoed['state']} {token}"
    progress = dict(echoed.get("progress") or {})
    echoed["progress"] = {**progress, "note": f"seen {token}", token: 1}
    echoed["echo"] = token
    echoed["message"] = f"authorized as {token}"
    return echoed


def error_body(token: str) -> dict[str, Any]:
    return {
        "error": {"code": "internal_error", "message": f"bad token {token}"},
        "detail": token,
    }


def create(payload: dict[str, Any], token: str) -> dict[str, Any]:
    return {**payload, "state": f"queued {token}", "echo": token}


def status_url(url: str, token: str) -> str:
    return f"{url}?echo={token}"
