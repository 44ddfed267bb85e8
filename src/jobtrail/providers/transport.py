"""The HTTP sessions provider calls are sent on: one request per call, nothing on their own.

aiohttp re-sends a request whose method it deems idempotent (GET, HEAD, OPTIONS, TRACE,
PUT, DELETE) once when the connection closes or resets before the answer
(`ClientSession._request`, `retry_persistent_connection`). The ledger would then hold one
attempt for two requests on the wire: a second PUT create, a second DELETE cancel, a second
one-time download. Turning keep-alive off does not help (the re-send follows any
disconnect), and there is no public switch. So every session jobtrail builds for provider
calls goes through `single_shot`, which turns the private `_retry_connection` off, and
refuses to build one (`TransportUnsafe`, at start: `check_transport`) when an aiohttp
release no longer has it, rather than let it re-send silently again.

The rest of the transport's promise lives where the requests are made: redirects are never
followed (`allow_redirects=False`, providers/http/provider.py); botocore's own retries and its S3
region re-send are off (providers/aws/calls.py), and aiobotocore's aiohttp sessions pass
through `single_shot` too, never following a redirect (`aws_session_class`). A retry is
always the core's decision and a new recorded attempt (docs/guarantees/transport.md).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import aiohttp

from jobtrail.errors import TransportUnsafe

_SWITCH = "_retry_connection"


def check_transport() -> None:
    """Raise TransportUnsafe when this aiohttp has no switch for its own re-sends."""
    if _SWITCH not in getattr(aiohttp.ClientSession, "ATTRS", ()):
        raise TransportUnsafe(
            f"aiohttp {aiohttp.__version__} has no ClientSession.{_SWITCH}, so jobtrail "
            "cannot stop it from re-sending a request on its own after a dropped "
            "connection, and sends nothing: install the aiohttp version jobtrail's "
            "package requires"
        )


def single_shot(session: aiohttp.ClientSession) -> aiohttp.ClientSession:
    """`session`, made to send each request once: no re-send after a dropped connection."""
    check_transport()
    if not hasattr(session, _SWITCH):
        raise TransportUnsafe(f"this aiohttp session has no {_SWITCH}; nothing is sent on it")
    setattr(session, _SWITCH, False)
    return session


def provider_session(connections: int) -> aiohttp.ClientSession:
    """The session every HTTP provider call goes out on (providers/registry.py)."""
    connector = aiohttp.TCPConnector(limit=connections, limit_per_host=0)
    # One session serves every operation: a shared jar would carry one operation's
    # cookies into another's calls. Providers that need them get a jar per operation.
    session = aiohttp.ClientSession(
        connector=connector, trust_env=False, cookie_jar=aiohttp.DummyCookieJar()
    )
    return single_shot(session)


@cache
def aws_session_class() -> type[Any]:
    """aiobotocore's aiohttp session class, with each session it opens made single-shot
    (given to botocore's config as `http_session_cls`). Imported when asked: the AWS
    providers are an optional extra."""
    from aiobotocore.httpsession import AIOHTTPSession  # type: ignore[import-untyped]

    if not callable(getattr(AIOHTTPSession, "_get_session", None)):
        raise TransportUnsafe(
            "this aiobotocore opens its aiohttp sessions where jobtrail cannot stop them "
            "from re-sending a request on their own, and the AWS providers send nothing: "
            "install the aiobotocore version jobtrail's aws extra requires"
        )

    class SingleShotSession(AIOHTTPSession):  # type: ignore[misc]
        async def _get_session(self, proxy_url: Any) -> _NoRedirects:
            session = await super()._get_session(proxy_url)
            return _NoRedirects(single_shot(session))

    return SingleShotSession


class _NoRedirects:
    """An aiohttp session as aiobotocore sends on it (`request` only), without following a
    redirect: aiobotocore leaves aiohttp's default, which follows up to ten, each a request
    the ledger never hears of (and a 307 re-sends the body elsewhere)."""

    def __init__(self, session: aiohttp.ClientSession) -> None:
        self._session = session

    def request(self, *args: Any, **kwargs: Any) -> Any:
        return self._session.request(*args, **{**kwargs, "allow_redirects": False})
