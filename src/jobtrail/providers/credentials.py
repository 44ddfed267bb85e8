"""Which credential variables a provider needs that the environment does not hold now.

A missing credential is not an error of the provider or of the request: every call would
stop before sending, so the people who start commands are told at once, by name."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from jobtrail.errors import ProviderConfigError
from jobtrail.providers.config import ProviderSpec, parse_provider


def unset_credentials(spec: ProviderSpec) -> list[str]:
    """The environment variables `spec`'s calls read their credential from and are unset."""
    if spec.auth is not None and not os.environ.get(spec.auth.env):
        return [spec.auth.env]
    return []


def unset_by_provider(configs: Iterable[tuple[str, Any]]) -> dict[str, list[str]]:
    """For (provider name, stored provider document) pairs: the unset variables, by name."""
    missing: dict[str, list[str]] = {}
    for name, document in configs:
        if name in missing:
            continue
        try:
            spec = parse_provider(document)
        except ProviderConfigError:  # a stored document that no longer parses
            continue
        missing[name] = unset_credentials(spec)
    return {name: names for name, names in missing.items() if names}
