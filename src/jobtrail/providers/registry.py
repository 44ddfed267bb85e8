"""The providers of stored operations. An HTTP operation carries its provider file's content,
so any worker rebuilds its provider without the file itself. A code operation carries its
plug-in's name and settings: only a worker that has that plug-in builds its provider, and a
worker without it never drives the operation (it is not even claimed: `code_names`)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import aiohttp

from jobtrail.core.model import Operation, ProviderKind
from jobtrail.errors import ProviderMissing
from jobtrail.providers.code.contract import CodeSpec
from jobtrail.providers.code.plugins import Plugins
from jobtrail.providers.file.config import ProviderSpec, parse_provider
from jobtrail.providers.file.spec import DEFAULT_TIMEOUT, ResultSpec
from jobtrail.providers.http.provider import HttpProvider
from jobtrail.providers.protocol import Provider
from jobtrail.providers.transport import check_transport, provider_session


class ProviderRegistry:
    def __init__(self, *, connections: int = 100, plugins: Plugins | None = None) -> None:
        check_transport()  # at start: an aiohttp that would re-send on its own is refused
        self._connections = connections
        self._session: aiohttp.ClientSession | None = None
        self._built: dict[str, Provider] = {}
        self._specs: dict[str, list[tuple[Any, ProviderSpec]]] = {}
        self._code: dict[str, Provider] = {}
        self.plugins: Plugins = plugins if plugins is not None else Plugins()
        self._made: dict[tuple[str, str], Provider] = {}

    def register(self, provider: Provider) -> None:
        """Use this provider object for every operation of its name, whatever its kind (tests
        and benchmarks stand one in for a provider file this way)."""
        self._code[provider.name] = provider

    def code_names(self) -> frozenset[str]:
        """The code providers this process can drive operations of."""
        return frozenset(self.plugins) | frozenset(self._code)

    def session(self) -> aiohttp.ClientSession:
        """The one session of every HTTP provider call: it sends each request once
        (providers/transport.py)."""
        if self._session is None or self._session.closed:
            self._session = provider_session(self._connections)
        return self._session

    def spec(self, op: Operation) -> ProviderSpec:
        """The parsed provider file an HTTP operation was submitted with (cached). Operations
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
        if op.provider_kind is ProviderKind.CODE:
            return self._plugin_provider(op)
        spec = self.spec(op)
        provider = self._built.get(str(id(spec)))
        if provider is None:
            provider = self._built[str(id(spec))] = HttpProvider(spec, self.session())
        return provider

    def timeout(self, op: Operation) -> timedelta:
        """The longest one call of `op`'s provider may take."""
        if op.provider_kind is ProviderKind.CODE:
            return self._code_timeout(self.for_operation(op))
        return self.spec(op).timeout

    def call_limit(self, op: Operation) -> float | None:
        """Seconds after which jobtrail stops waiting for a call (None: the provider keeps
        its own time, as the HTTP provider does)."""
        if op.provider_kind is ProviderKind.CODE:
            return self.timeout(op).total_seconds()
        return None

    def result_spec(self, op: Operation) -> ResultSpec:
        """What a fetched result of `op` is validated against (by jobtrail, never by the
        provider): the provider file's [result], or what a code provider declares."""
        if op.provider_kind is ProviderKind.CODE:
            result = getattr(self.for_operation(op), "result", None)
            return result if isinstance(result, ResultSpec) else ResultSpec()
        return self.spec(op).result

    def code_provider(self, spec: CodeSpec) -> Provider:
        """The provider object of a code provider's spec (a census lists through it): the
        one registered under its name, else the plug-in's, made from the spec's settings."""
        if spec.name in self._code:
            return self._code[spec.name]
        plugin = self.plugins.get(spec.name)
        if plugin is None:
            raise ProviderMissing(f"the code provider {spec.name!r} is not installed here")
        key = (spec.name, json.dumps(spec.settings, sort_keys=True, default=str))
        if key not in self._made:
            self._made[key], _ = plugin.build(spec.settings)
        return self._made[key]

    def _plugin_provider(self, op: Operation) -> Provider:
        plugin = self.plugins.get(op.provider)
        if plugin is None:
            broken = self.plugins.broken.get(op.provider)
            raise ProviderMissing(missing_message(op) + (f" ({broken})" if broken else ""))
        settings = op.provider_config.get("settings") or {}
        key = (op.provider, json.dumps(settings, sort_keys=True, default=str))
        provider = self._made.get(key)
        if provider is None:
            provider, _ = plugin.build(settings)
            self._made[key] = provider
        return provider

    @staticmethod
    def _code_timeout(provider: Provider) -> timedelta:
        timeout = getattr(provider, "timeout", DEFAULT_TIMEOUT)
        return timeout if isinstance(timeout, timedelta) else DEFAULT_TIMEOUT

    async def close(self) -> None:
        """Close the shared HTTP session and every code provider that has an async
        `close()` (optional in the contract: docs/code-providers.md)."""
        for provider in [*self._made.values(), *self._code.values()]:
            close = getattr(provider, "close", None)
            if close is not None:
                await close()
        if self._session is not None:
            await self._session.close()


def missing_message(op: Operation) -> str:
    """Why `op` is not driven here, naming the provider it needs."""
    version = f" {op.provider_version}" if op.provider_version else ""
    return (
        f"{op.operation_id} is driven by the code provider {op.provider!r}{version}, which "
        "this process does not have: install the package providing it (entry point group "
        "jobtrail.providers) or pass --provider-module; jobtrail never drives it with "
        "another provider"
    )
