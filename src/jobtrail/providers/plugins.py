"""Finding code providers: the one loader every driver uses (worker, run, serve, mcp,
submit and `jobtrail.Client`).

Two sources, both by name (see providers/code.py): entry points in the group
`jobtrail.providers` (name = provider name, value = `module:factory`), and modules given
explicitly (`--provider-module pkg.module`, `Client(provider_modules=[...])`) whose
`PROVIDERS` maps names to factories. A module given explicitly wins over an installed entry
point of the same name. Anything that cannot be loaded is one ProviderConfigError line that
names it, raised when the driver starts, so a broken plug-in never fails later, mid-call.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from jobtrail.core.model import Operation, ProviderKind
from jobtrail.errors import ProviderConfigError
from jobtrail.providers.code import (
    ENTRY_POINT_GROUP,
    NAME,
    CodeProvider,
    CodeSpec,
    Factory,
    declared,
)


@dataclass(frozen=True, kw_only=True)
class Plugin:
    """A code provider's factory and where it came from (for messages)."""

    name: str
    factory: Factory
    origin: str

    def build(self, settings: Mapping[str, Any]) -> tuple[CodeProvider, CodeSpec]:
        """The provider for `settings`, and what it declares (checked)."""
        try:
            provider = self.factory(settings)
        except Exception as exc:  # foreign code: one line naming it, whatever it raised
            raise ProviderConfigError(
                f"code provider {self.name!r} ({self.origin}) could not be made: "
                f"{type(exc).__name__}: {_line(exc)}"
            ) from None
        spec = declared(provider, settings, self.origin)
        if spec.name != self.name:
            raise ProviderConfigError(
                f"code provider {self.name!r} ({self.origin}) calls itself {spec.name!r}; "
                "the name it is registered under and its `name` must be the same"
            )
        return provider, spec


def load_plugins(modules: Sequence[str] = ()) -> dict[str, Plugin]:
    """Every code provider this process can use, by name: installed entry points, then
    `modules` (each exposing `PROVIDERS`)."""
    found: dict[str, Plugin] = {}
    for point in _installed():
        origin = f"entry point {point.name} = {point.value}"
        known = found.get(point.name)
        if known is not None and known.origin != origin:
            raise ProviderConfigError(
                f"two installed packages provide the code provider {point.name!r} ({known.origin}"
                f"; {origin}); uninstall one"
            )
        found[point.name] = Plugin(name=point.name, factory=_load(point, origin), origin=origin)
    for module in modules:
        for name, factory in _module_providers(module).items():
            found[name] = Plugin(name=name, factory=factory, origin=f"--provider-module {module}")
    return found


def installed_names() -> frozenset[str]:
    """The code providers installed as entry points, by name, without importing any (for
    commands that only read the ledger)."""
    return frozenset(point.name for point in _installed())


def _installed() -> list[EntryPoint]:
    points = []
    for point in entry_points(group=ENTRY_POINT_GROUP):
        if not NAME.fullmatch(point.name):
            raise ProviderConfigError(
                f"entry point {point.name!r} in group {ENTRY_POINT_GROUP} is not a provider "
                "name (letters, digits, - and _)"
            )
        points.append(point)
    return points


def _load(point: EntryPoint, origin: str) -> Factory:
    try:
        factory = point.load()
    except Exception as exc:  # an import error, or any error the module raises on import
        raise ProviderConfigError(
            f"code provider {origin} cannot be loaded: {type(exc).__name__}: {_line(exc)}"
        ) from None
    if not callable(factory):
        raise ProviderConfigError(f"code provider {origin}: {point.value} is not callable")
    return factory  # type: ignore[no-any-return]


def _module_providers(module: str) -> dict[str, Factory]:
    where = f"--provider-module {module}"
    try:
        loaded = importlib.import_module(module)
    except Exception as exc:
        raise ProviderConfigError(
            f"{where}: cannot import it: {type(exc).__name__}: {_line(exc)}"
        ) from None
    providers = getattr(loaded, "PROVIDERS", None)
    if not isinstance(providers, Mapping):
        raise ProviderConfigError(
            f"{where}: the module has no PROVIDERS mapping (provider name -> factory)"
        )
    checked: dict[str, Factory] = {}
    for name, factory in providers.items():
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise ProviderConfigError(f"{where}: PROVIDERS key {name!r} is not a provider name")
        if not callable(factory):
            raise ProviderConfigError(f"{where}: PROVIDERS[{name!r}] is not callable")
        checked[name] = factory
    return checked


def _line(exc: BaseException) -> str:
    """An exception's message on one line, kept short."""
    return " ".join(str(exc).split())[:300]


def not_installed(op: Operation) -> str | None:
    """Why `op`'s code provider is not available to commands run here (it is no installed
    entry point), or None: for `status` and `explain`, which load no plug-in. An operation
    whose automation ended needs no provider any more."""
    if op.provider_kind is not ProviderKind.CODE or op.state.ends_automation:
        return None
    if op.provider in installed_names():
        return None
    return (
        "not installed here: only a worker that has it (an installed entry point in group "
        f"{ENTRY_POINT_GROUP}, or --provider-module) drives this operation"
    )
