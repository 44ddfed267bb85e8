"""Which provider a `Client.submit` means: see jobtrail.providers.resolve, shared with the
CLI's `submit`."""

from __future__ import annotations

from jobtrail.profiles import profile_names as shipped_profiles
from jobtrail.providers.resolve import ProviderRef, resolve_provider

__all__ = ["ProviderRef", "resolve_provider", "shipped_profiles"]
