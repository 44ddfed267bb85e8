"""Which provider a submit means: a `ProviderSpec`; a provider file's path; a name in
JOBTRAIL_PROVIDERS or ./providers (as NAME.toml); a code provider's name (an installed entry
point or a `--provider-module`'s); or a profile shipped in the package
(`jobtrail/profiles/NAME.toml`), in that order.

A provider file holding `code = "NAME"` is a code provider's settings file: its `[settings]`
go to that plug-in's factory (providers/code/contract.py). A local file wins over a code provider or
a shipped profile of the same name; a local file that exists but is broken is reported,
never silently replaced by either."""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jobtrail.errors import ProviderConfigError
from jobtrail.providers.code.contract import CodeSpec, file_settings, is_code_document, with_file
from jobtrail.providers.code.plugins import Plugin, Plugins
from jobtrail.providers.file.config import find_provider, load_provider_file
from jobtrail.providers.file.spec import ProviderSpec

ProviderRef = str | os.PathLike[str] | ProviderSpec | CodeSpec
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")


def resolve_provider(
    provider: ProviderRef, plugins: Mapping[str, Plugin] | None = None
) -> ProviderSpec | CodeSpec:
    """The provider `provider` names; `plugins` are the code providers loaded here
    (providers.plugins.load_plugins)."""
    plugins = plugins if plugins is not None else {}
    if isinstance(provider, ProviderSpec | CodeSpec):
        return provider
    if isinstance(plugins, Plugins) and isinstance(provider, str):
        plugins.check(provider)
    if not isinstance(provider, str):
        return _from_file(Path(os.fspath(provider)), plugins)
    if provider.endswith(".toml") or "/" in provider or os.sep in provider:
        return _from_file(Path(provider), plugins)
    local = _local_file(provider)
    if local is not None:
        return _from_file(local, plugins)
    if provider in plugins:
        _, spec = plugins[provider].build({})
        return spec
    return find_provider(provider)  # a local NAME.toml, else the shipped profile


def resolve_named(name: str, plugins: Mapping[str, Plugin]) -> ProviderSpec | CodeSpec:
    """A provider by NAME only, never a path (a census, a dashboard form): NAME.toml (a code
    provider's settings file included), an installed code provider, a shipped profile."""
    if not _NAME.fullmatch(name):
        from jobtrail.providers.file.config import find_provider_named

        find_provider_named(name)  # says why it is not a name
    return resolve_provider(name, plugins)


def _from_file(path: Path, plugins: Mapping[str, Plugin]) -> ProviderSpec | CodeSpec:
    doc = _code_document(path)
    if doc is None:
        return load_provider_file(path)
    name = doc["code"]
    if isinstance(plugins, Plugins) and isinstance(name, str):
        plugins.check(name)
    plugin = plugins.get(name) if isinstance(name, str) else None
    if plugin is None:
        raise ProviderConfigError(
            f"{path} is the settings file of the code provider {name!r}, which is not "
            "installed here: install the package providing it (entry point group "
            "jobtrail.providers) or pass --provider-module"
        )
    _, spec = plugin.build(file_settings(doc, str(path)))
    return with_file(spec, doc, str(path))


def _code_document(path: Path) -> dict[str, Any] | None:
    """The file's document if it is a code provider's; None for anything else (which the
    provider file loader then reads, and reports if broken)."""
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    return doc if is_code_document(doc) else None


def _local_file(name: str) -> Path | None:
    if not _NAME.fullmatch(name):
        return None
    folder = os.environ.get("JOBTRAIL_PROVIDERS") or "providers"
    file = Path(folder) / f"{name}.toml"
    return file if file.exists() else None
