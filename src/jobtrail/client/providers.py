"""Which provider a `Client.submit` means: see jobtrail.providers.resolve, shared with the
CLI's `submit`."""

from __future__ import annotations

from jobtrail.providers.resolve import ProviderRef, resolve_provider, shipped_profiles

__all__ = ["ProviderRef", "resolve_provider", "shipped_profiles"]
