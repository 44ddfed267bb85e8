"""Which credential variables a provider needs that the environment does not hold now.

A missing credential is not an error of the provider or of the request, so the people who
start commands are told at once, by name: `submit` warns, `worker` and `run` say it loudly
at start. An HTTP provider's calls stop before sending without it. A code provider reads
its credentials itself (`secret_env` names the variables), possibly from elsewhere as well
(AWS's configuration files): it is warned about, never stopped."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from jobtrail.errors import JobtrailError
from jobtrail.providers.code.contract import CodeSpec, is_code_document, stored_document
from jobtrail.providers.file.config import ProviderSpec, parse_provider


@dataclass(frozen=True, kw_only=True)
class Unset:
    """A provider's credential variables that are not set, and what that means, in words."""

    provider: str
    names: tuple[str, ...]
    code: bool  # a code provider: jobtrail cannot tell that its calls will fail

    @property
    def _variables(self) -> str:
        if len(self.names) == 1:
            return f"environment variable {self.names[0]} is not set"
        return f"none of the environment variables {', '.join(self.names)} is set"

    def at_submit(self) -> str:
        """The warning `submit` prints."""
        if self.code:
            return (
                f"warning: {self._variables}: the operation is recorded, but the code provider "
                f"{self.provider!r} may have no credential to send it with"
            )
        return (
            f"warning: {self._variables}: the operation is recorded, but nothing can be sent "
            f"to {self.provider!r} until it is"
        )

    def at_start(self) -> str:
        """The loud line `worker` and `run` print when they start."""
        if self.code:
            return (
                f"WARNING: {self._variables}: the code provider {self.provider!r} reads its "
                "credentials from it, so its calls may fail until it is."
            )
        return (
            f"WARNING: {self._variables}: nothing can be sent to provider {self.provider!r} "
            "until it is (its calls stop before sending)."
        )


def unset_credentials(spec: ProviderSpec | CodeSpec) -> Unset | None:
    """The credential variables `spec` reads that are unset now, or None. A code provider's
    `secret_env` may list alternatives (AWS: a key, or a session token too), so it is
    reported only when none of them is set."""
    if isinstance(spec, CodeSpec):
        names = spec.secret_env
        if not names or any(os.environ.get(name) for name in names):
            return None
        return Unset(provider=spec.name, names=names, code=True)
    env = spec.auth.env if spec.auth is not None else None  # a token command has none
    if env is not None and not os.environ.get(env):
        return Unset(provider=spec.name, names=(env,), code=False)
    return None


def unset_by_provider(configs: Iterable[tuple[str, Any]]) -> list[Unset]:
    """For (provider name, stored provider document) pairs: each provider's unset
    credential variables, once per provider."""
    missing: dict[str, Unset | None] = {}
    for name, document in configs:
        if name in missing:
            continue
        try:
            code = is_code_document(document)
            spec = stored_document(document) if code else parse_provider(document)
        except (JobtrailError, ValueError):  # a stored document that no longer parses
            continue
        missing[name] = unset_credentials(spec)
    return [unset for unset in missing.values() if unset is not None]
