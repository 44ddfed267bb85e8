"""Finding code providers: the one loader every driver uses (worker, run, serve, mcp,
submit and `jobtrail.Client`).

Two sources, both by name (see providers/code/contract.py): entry points in the group
`jobtrail.providers` (name = provider name, value = `module:factory`), and modules given
explicitly (`--provider-module pkg.module`, `Client(provider_modules=[...])`) whose
`PROVIDERS` maps names to factories. A module given explicitly wins over an installed entry
point of the same name.

Anything that cannot be loaded is one line naming it. A module given explicitly that cannot
be loaded stops the driver at start (ProviderConfigError): it was asked for. An installed
entry point that cannot be loaded (its optional dependencies missing, say) is kept aside in
`Plugins.broken` instead, so one broken package does not stop every worker: its provider is
missing here (its operations are left to workers that have it), drivers print the line,
and submitting to it raises it.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from jobtrail.core.model import Operation, ProviderKind
from jobtrail.core.redact import Redactor
from jobtrail.errors import ProviderConfigError
from jobtrail.providers.code.contract import (
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


class Plugins(dict[str, Plugin]):
    """The code providers loaded, by name; `broken` holds, by name, why an installed one
    could not be loaded."""

    def __init__(self) -> None:
        super().__init__()
        self.broken: dict[str, str] = {}

    def check(self, name: str) -> None:
        """Raise the reason `name` is installed but unusable, if it is."""
        if name in self.broken and name not in self:
            raise ProviderConfigError(self.broken[name])


def load_plugins(modules: Sequence[str] = ()) -> Plugins:
    """Every code provider this process can use, by name: installed entry points, then
    `modules` (each exposing `PROVIDERS`)."""
    found = Plugins()
    for point in _installed():
        origin = f"entry point {point.name} = {point.value}"
        known = found.get(point.name)
        if known is not None and known.origin != origin:
            found.broken[point.name] = (
                f"two installed packages provide the code provider {point.name!r} ({known.origin}"
                f"; {origin}); uninstall one"
            )
            del found[point.name]
            continue
        if point.name in found.broken:
            continue
        try:
            found[point.name] = Plugin(name=point.name, factory=_load(point, origin), origin=origin)
        except ProviderConfigError as exc:
            found.broken[point.name] = str(exc)
    for module in modules:
        for name, factory in _module_providers(module).items():
            missing = missing_requirements(factory)
            if missing is not None:
                raise ProviderConfigError(f"--provider-module {module}: {name!r} {missing}")
            found[name] = Plugin(name=name, factory=factory, origin=f"--provider-module {module}")
    return found


def installed_names() -> frozenset[str]:
    """The code providers installed as entry points, by name, without importing any (for
    commands that only read the ledger)."""
    return frozenset(point.name for point in _installed())


def _installed() -> list[EntryPoint]:
    """The group's entry points; one whose name is no provider name is ignored (no
    operation can name it)."""
    return [p for p in entry_points(group=ENTRY_POINT_GROUP) if NAME.fullmatch(p.name)]


def _load(point: EntryPoint, origin: str) -> Factory:
    try:
        factory = point.load()
    except Exception as exc:  # an import error, or any error the module raises on import
        raise ProviderConfigError(
            f"code provider {origin} cannot be loaded: {type(exc).__name__}: {_line(exc)}"
        ) from None
    if not callable(factory):
        raise ProviderConfigError(f"code provider {origin}: {point.value} is not callable")
    missing = missing_requirements(factory)
    if missing is not None:
        raise ProviderConfigError(f"code provider {origin} cannot be used here: {missing}")
    return factory  # type: ignore[no-any-return]


def missing_requirements(factory: Any) -> str | None:
    """Why the modules a factory's module declares it needs (`REQUIRES`: import name ->
    how to install it) cannot be imported here, or None. Checked before a provider is
    advertised, so a worker lacking them never claims its operations; nothing is imported
    (a plug-in whose module imports its dependencies lazily is checked all the same)."""
    module = sys.modules.get(getattr(factory, "__module__", "") or "")
    needs = getattr(module, "REQUIRES", None)
    if not isinstance(needs, Mapping):
        return None
    for name, how in needs.items():
        try:
            found = importlib.util.find_spec(str(name))
        except (ImportError, ValueError):
            found = None
        if found is None:
            return f"it needs {name}, which is not installed ({how})"
    return None


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
    """An exception's message on one line, kept short, and without the secrets it may
    hold: foreign code that fails while reading its credential (a factory checking a
    token, a module signing on import) may put it in its message, which is printed."""
    return environment_redactor().text(" ".join(str(exc).split()))[:300]


_CREDENTIAL_VARIABLE = (
    *("TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "PWD", "PASS", "AUTH", "CREDENTIAL"),
    *("JWT", "BEARER", "SESSION", "COOKIE", "SIGNATURE"),
)
_NOT_CREDENTIALS = frozenset({"PWD", "OLDPWD"})  # the shell's working directories


def environment_redactor() -> Redactor:
    """A redactor knowing the value of every environment variable whose name says it holds
    a credential (`REPORTS_API_TOKEN`, `AWS_SECRET_ACCESS_KEY`, `DB_PASSWORD`...): before a
    code provider is made, jobtrail cannot know which secrets it uses (its `secret_env`
    is read from it), so every such value is hidden from what it says."""
    values = [
        value
        for name, value in os.environ.items()
        if len(value) >= 8
        and name.upper() not in _NOT_CREDENTIALS
        and any(word in name.upper() for word in _CREDENTIAL_VARIABLE)
    ]
    return Redactor().extended(values=values)


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
