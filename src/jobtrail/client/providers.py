"""Which provider a `Client.submit` means: a `ProviderSpec`, a provider file's path, a name
in JOBTRAIL_PROVIDERS or ./providers (as the CLI resolves it), or a profile shipped in the
package (`jobtrail/profiles/NAME.toml`), in that order.

A shipped profile is the last resort for a name, so a local file of the same name wins; a
local file that exists but is broken is reported, never silently replaced by the profile."""

from __future__ import annotations

import os
import re
import tomllib
from importlib import resources
from importlib.resources.abc import Traversable

from jobtrail.errors import ProviderConfigError
from jobtrail.providers.config import find_provider, load_provider_file, parse_provider
from jobtrail.providers.spec import ProviderSpec

ProviderRef = str | os.PathLike[str] | ProviderSpec
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")


def resolve_provider(provider: ProviderRef) -> ProviderSpec:
    if isinstance(provider, ProviderSpec):
        return provider
    if not isinstance(provider, str):
        return load_provider_file(os.fspath(provider))
    try:
        return find_provider(provider)
    except ProviderConfigError:
        shipped = _shipped(provider)
        if shipped is None or _local_file(provider):
            raise
    try:
        return parse_provider(tomllib.loads(shipped.read_text(encoding="utf-8")))
    except (ProviderConfigError, tomllib.TOMLDecodeError) as exc:  # a packaging bug
        raise ProviderConfigError(f"the shipped profile {provider!r} is broken: {exc}") from None


def shipped_profiles() -> list[str]:
    """The names of the profiles shipped in the package."""
    folder = resources.files("jobtrail") / "profiles"
    return sorted(
        f.name.removesuffix(".toml") for f in folder.iterdir() if f.name.endswith(".toml")
    )


def _shipped(name: str) -> Traversable | None:
    if not _NAME.fullmatch(name):
        return None
    file = resources.files("jobtrail") / "profiles" / f"{name}.toml"
    return file if file.is_file() else None


def _local_file(name: str) -> bool:
    folder = os.environ.get("JOBTRAIL_PROVIDERS") or "providers"
    return os.path.exists(os.path.join(folder, f"{name}.toml"))
