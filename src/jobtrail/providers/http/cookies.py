"""Cookies kept per operation, for providers whose file says `cookies = "per-operation"`.

A provider's cookie is a fact about one conversation: sending the cookie one operation
received with another operation's calls would mix their sessions (and may hand one
caller's session to another). So there is no shared jar: each operation gets its own, held
in this worker's memory only. Cookies are never recorded (Cookie and Set-Cookie are
sensitive headers, and the jar never reaches the ledger); an operation taken over by
another worker, or resumed after a restart, starts without them.
"""

from __future__ import annotations

from collections import OrderedDict

import aiohttp
from yarl import URL

# Enough for every operation a worker drives at once; the least recently used jar goes first.
MAX_JARS = 10_000


class OperationCookies:
    def __init__(self, limit: int = MAX_JARS) -> None:
        self._jars: OrderedDict[str, aiohttp.CookieJar] = OrderedDict()
        self._limit = limit

    def _jar(self, operation_id: str) -> aiohttp.CookieJar:
        jar = self._jars.get(operation_id)
        if jar is None:
            # unsafe=True: the jar is this operation's alone, so a provider reached by IP
            # address (a simulator on loopback) may set cookies too
            jar = self._jars[operation_id] = aiohttp.CookieJar(unsafe=True)
            while len(self._jars) > self._limit:
                self._jars.popitem(last=False)
        else:
            self._jars.move_to_end(operation_id)
        return jar

    def header(self, operation_id: str, url: str) -> str | None:
        """The Cookie header for this operation's call to `url`, if it holds any cookie."""
        if operation_id not in self._jars:
            return None
        cookies = self._jar(operation_id).filter_cookies(URL(url))
        pairs = [f"{morsel.key}={morsel.coded_value}" for morsel in cookies.values()]
        return "; ".join(pairs) or None

    def remember(self, operation_id: str, response: aiohttp.ClientResponse) -> None:
        """Keep the cookies this operation's answer set."""
        if response.cookies:
            self._jar(operation_id).update_cookies(response.cookies, response.url)
