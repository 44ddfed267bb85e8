"""Providers for stored operations: each operation carries its provider file's content, so
any worker can rebuild the provider it needs without the file itself."""

from __future__ import annotations

from typing import Any

import aiohttp

from jobtrail.core.model import Operation
from jobtrail.providers.config import ProviderSpec, parse_provider
from jobtrail.providers.http import HttpProvider
from jobtrail.providers.protocol import Provider


class ProviderRegistry:
    def __init__(self, *, connections: int = 100) -> None:
        self._connections = connections
        self._session: aiohttp.ClientSession | None = None
        self._built: dict[str, Provider] = {}
        self._specs: dict[str, list[tuple[Any, ProviderSpec]]] = {}
        self._code: dict[str, Provider] = {}

    def register(self, provider: Provider) -> None:
        """Use a code provider (any object following the Provider protocol) by name."""
        self._code[provider.name] = provider

    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=self._connections, limit_per_host=0)
            # One session serves every operation: a shared jar would carry one operation's
            # cookies into another's calls. Providers that need them get a jar per operation.
            self._session = aiohttp.ClientSession(
                connector=connector, trust_env=False, cookie_jar=aiohttp.DummyCookieJar()
            )
        return self._session

    def spec(self, op: Operation) -> ProviderSpec:
        """The parsed provider file an operation was submitted with (cached). Operations
        read from the store share one decoded document per provider file, so the cache
        compares identities first and documents only when those differ."""
        known = self._specs.setdefault(op.provider, [])
        for document, spec in known:
            if document is op.provider_config or document == op.provider_config:
                return spec
        spec = parse_provider(op.provider_config)
        known.append((op.provider_config, spec))
        return spec

    def for_operation(self, op: Operation) -> Provider:
        if op.provider in self._code:
            return self._code[op.provider]
        spec = self.spec(op)
        provider = self._built.get(str(id(spec)))
        if provider is None:
            provider = self._built[str(id(spec))] = HttpProvider(spec, self.session())
        return provider

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
