"""Who an MCP caller is: the server's configuration (stdio: `--actor`, else JOBTRAIL_ACTOR,
else the login that runs the server) or the transport's authentication (HTTP: the agent a
token names). Never what a client says of itself: its `clientInfo` name is free text that
would let it pose as another agent or take a named agent's grant in the action policy.
Nor what a browser page is: over HTTP, a request from a page of an origin not allowed is
refused (`checked_origin` reads the allowed ones).

Kept free of the MCP SDK so the HTTP surface and the CLI can use it without loading it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jobtrail.errors import InvalidInput
from jobtrail.services.defaults import actor as default_actor

# The ASGI scope key where the HTTP surface puts the agent its token names.
SCOPE_KEY = "jobtrail.agent"


def as_agent(name: str) -> str:
    """`name` as an agent's actor name: `agent:` is added unless it is already there."""
    return name if name.startswith("agent:") else f"agent:{name}"


class Identity:
    """The actor a request acts as. `actor` is the server's own answer (None: only an
    authenticated transport can say, as over HTTP, where a request without one never gets
    this far)."""

    def __init__(self, actor: str | None) -> None:
        self.actor = None if actor is None else as_agent(actor)

    @classmethod
    def configured(cls, actor: str | None) -> Identity:
        """`actor`, else JOBTRAIL_ACTOR, else `agent:<login>`: always an agent."""
        return cls(actor or default_actor("agent"))

    def of(self, request: Any) -> str:
        """The actor of one request; `request` is the transport's request object (its
        `scope` carries the authenticated agent over HTTP), or None on stdio."""
        scope = getattr(request, "scope", None)
        if isinstance(scope, Mapping) and isinstance(agent := scope.get(SCOPE_KEY), str):
            return agent
        if self.actor is None:
            raise PermissionError("this request carries no authenticated agent")
        return self.actor


def checked_origin(text: str, option: str) -> str:
    """`text` as an origin to compare (`scheme://host[:port]`, lower case, no path), or
    InvalidInput naming `option`."""
    origin = text.strip().rstrip("/").lower()
    scheme, sep, authority = origin.partition("://")
    if scheme not in ("http", "https") or not sep or not authority or "/" in authority:
        raise InvalidInput(
            f"{option} takes an origin, scheme://host[:port] (like https://app.example.com), "
            f"not {text[:100]!r}"
        )
    return origin
