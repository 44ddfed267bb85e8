"""Code providers: the contract a plug-in follows, and what the ledger stores of one.

A code provider drives an API that a provider file cannot describe (a signed JSON protocol,
gRPC, an SDK-only service). It is Python code following `CodeProvider`, made by a factory
that jobtrail finds by name (see providers/code/plugins.py):

- an entry point in the group `jobtrail.providers`, whose name is the provider's name and
  whose value is `module:factory`;
- or a module given with `--provider-module pkg.module` (Client: `provider_modules`), whose
  `PROVIDERS` maps provider names to factories.

A factory takes the free-form `[settings]` table of an optional provider file (empty without
one) and returns the provider. The provider declares its version, capabilities, deadlines
and poll policy itself; the operation stores them with the settings (`CodeSpec.document`),
so any worker that has the same plug-in rebuilds the same provider, and a worker without it
never drives the operation. docs/code-providers.md is the full contract.

A provider file for a code provider names it and holds its settings, nothing secret:

    code = "sfn"            # the code provider's name
    [settings]              # handed to the factory as it is
    state_machine = "arn:aws:states:..."
    [deadlines]             # optional: overrides of the provider's own
    result = "6h"
    [poll]                  # optional: the provider file's [poll] keys
    min = "5s"
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from enum import StrEnum
from typing import Any, ClassVar, Protocol

from jobtrail.core import outcomes as o
from jobtrail.core.census import Listed
from jobtrail.core.durations import parse_duration
from jobtrail.core.model import Capabilities, Operation, ProviderKind
from jobtrail.core.redact import Redactor
from jobtrail.core.remote_deadline import RemoteDeadline
from jobtrail.errors import InvalidInput, ProviderConfigError
from jobtrail.providers.file.config import DEFAULT_DEADLINES, poll_rules
from jobtrail.providers.file.declared import remote_deadline
from jobtrail.providers.file.keys import PollKeys
from jobtrail.providers.file.schema import keys_of
from jobtrail.providers.file.spec import DEFAULT_TIMEOUT, ResultSpec
from jobtrail.providers.protocol import Provider

ENTRY_POINT_GROUP = "jobtrail.providers"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")
_FILE_KEYS = frozenset({"code", "settings", "deadlines", "poll"})


class CodeProvider(Provider, Protocol):
    """A provider written in Python, found by name (entry point or `--provider-module`).

    Beside `Provider`'s `name`, `capabilities`, `describe` and `call`:

    - `version`: the plug-in's version, recorded on every operation it drives;
    - `deadlines`: create / result / cancel as durations ("2m", "6h" or timedeltas); the
      ones left out take the provider file's defaults;
    - `poll`: the provider file's `[poll]` table (initial, cap, min, max, not_found_grace,
      max_refused_reads); `{}` takes its defaults.

    Optional attributes, read when present: `timeout` (a timedelta: the longest one call
    may take, 30 s by default; jobtrail stops waiting after it and counts the call as one
    whose outcome is unknown), `secret_env` (names of environment variables whose values
    must never be recorded, however the provider echoes them), `redact_fields` (more field
    names whose values are always redacted) and `result` (a `ResultSpec`: the content type,
    schema, item rules jobtrail validates a fetched result against).

    Optional, for the census (docs/census.md): `async def list_jobs(self, cursor: str |
    None) -> Listing`, one page of the provider's jobs, newest first (`cursor`: None for the
    first page, then the page's `cursor`), each job with the marker jobtrail placed on it;
    `census_marker` (a `Marker`: whether that marker is the operation id or the operation's
    idempotency token) and `census_sees` (one sentence: what that listing shows). A
    provider without `list_jobs` is one whose census sees nothing.
    """

    # Read-only to jobtrail: a plain class attribute (`deadlines = {"create": "2m"}`) fits.
    @property
    def version(self) -> str: ...

    @property
    def deadlines(self) -> Mapping[str, str | timedelta]: ...

    @property
    def poll(self) -> Mapping[str, Any]: ...


Factory = Callable[[Mapping[str, Any]], CodeProvider]


class Marker(StrEnum):
    """What the marker a code provider's listing reads on a job (`Listed.marker`) is."""

    OPERATION = "operation_id"  # the operation's id (a job name built from it, say)
    TOKEN = "idempotency_token"  # the operation's idempotency token (an execution name)


@dataclass(frozen=True, kw_only=True)
class Listing:
    """One page of a code provider's listing (`list_jobs`), as a census records it.

    `outcome`: `Found` when the page was read (its `job_ids` need not be filled); a
    `Throttled` (with `retry_after` when the provider said one), `Rejected` or `Ambiguous`
    when it was not, which stops the census there. `request`: what was sent, as `describe`
    says it (never a credential); `detail`: the answer's metadata (request id, timing)."""

    outcome: o.CallOutcome
    jobs: tuple[Listed, ...] = ()
    cursor: str | None = None  # the next page's; None: the listing ends here
    request: Mapping[str, Any] = field(default_factory=dict)
    detail: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class CodeSpec:
    """A code provider as operations are submitted to it: what the ledger stores, readable
    without the plug-in (so `status`, decisions and redaction work in any process)."""

    kind: ClassVar[ProviderKind] = ProviderKind.CODE
    create_method: ClassVar[str] = "CALL"
    create_placeholders: ClassVar[tuple[str, ...]] = ()  # a code provider takes no path values

    name: str
    version: str
    capabilities: Capabilities
    settings: dict[str, Any] = field(default_factory=dict)
    deadlines: dict[str, timedelta] = field(default_factory=dict)
    poll: dict[str, Any] = field(default_factory=dict)
    timeout: timedelta = DEFAULT_TIMEOUT
    secret_env: tuple[str, ...] = ()
    redact_fields: tuple[str, ...] = ()
    # where the provider takes a deadline of its own (a body field), written at submit
    remote_deadline: RemoteDeadline | None = None
    # top-level body fields the provider writes itself (its token): refused at submit
    own_fields: tuple[str, ...] = ()
    # what its census sees (its `census_sees`), None: it has no `list_jobs`
    census: str | None = None
    census_marker: Marker = Marker.OPERATION

    @property
    def target(self) -> str:
        """What the fingerprint binds a token to: this code provider's create."""
        return f"{self.name}:code create"

    def target_with(self, path: Mapping[str, str]) -> str:
        return self.target

    @property
    def document(self) -> dict[str, Any]:
        """What each operation stores: JSON, secret-free, enough to rebuild the provider."""
        return {
            "code": self.name,
            "version": self.version,
            "settings": self.settings,
            "deadlines": {k: f"{v.total_seconds():g}s" for k, v in self.deadlines.items()},
            "poll": self.poll,
            "timeout": f"{self.timeout.total_seconds():g}s",
            "secret_env": list(self.secret_env),
            "redact": {"fields": list(self.redact_fields)},
            **({"deadline": deadline_table(self.remote_deadline)} if self.remote_deadline else {}),
        }

    @property
    def redactor(self) -> Redactor:
        return Redactor().extended(fields=self.redact_fields)

    def secret_values(self) -> list[str]:
        """The secrets this provider uses, read now from the environment (for redaction)."""
        return [os.environ[name] for name in self.secret_env if os.environ.get(name)]


def is_code_document(doc: Any) -> bool:
    """Whether a stored provider document (or a provider file) is a code provider's."""
    return isinstance(doc, dict) and "code" in doc


def declared(provider: CodeProvider, settings: Mapping[str, Any], where: str) -> CodeSpec:
    """What `provider` declares, checked; `where` names it in errors (its entry point or
    module). Every mistake is one ProviderConfigError line."""
    try:
        return _declared(provider, settings)
    except (InvalidInput, TypeError, ValueError, AttributeError) as exc:
        raise ProviderConfigError(f"code provider from {where}: {exc}") from None


def _declared(provider: CodeProvider, settings: Mapping[str, Any]) -> CodeSpec:
    name, version = getattr(provider, "name", None), getattr(provider, "version", None)
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise InvalidInput(f"its name must be 1-100 letters, digits, - or _, not {name!r}")
    if not isinstance(version, str) or not version.strip():
        raise InvalidInput(f"{name!r} declares no version (a non-empty `version` string)")
    caps = getattr(provider, "capabilities", None)
    if not isinstance(caps, Capabilities):
        raise InvalidInput(f"{name!r} declares no `capabilities` (a Capabilities record)")
    for method in ("describe", "call"):
        if not callable(getattr(provider, method, None)):
            raise InvalidInput(f"{name!r} has no `{method}` method")
    timeout = getattr(provider, "timeout", DEFAULT_TIMEOUT)
    if not isinstance(timeout, timedelta) or timeout <= timedelta(0):
        raise InvalidInput(f"{name!r}: `timeout` must be a positive timedelta")
    result = getattr(provider, "result", None)
    if result is not None and not isinstance(result, ResultSpec):
        raise InvalidInput(f"{name!r}: `result` must be a ResultSpec")
    remote = getattr(provider, "remote_deadline", None)
    if remote is not None and (not isinstance(remote, RemoteDeadline) or remote.header):
        raise InvalidInput(f"{name!r}: `remote_deadline` must be a RemoteDeadline in a field")
    return CodeSpec(
        name=name,
        version=version,
        capabilities=replace(caps, remote_deadline=remote is not None),
        remote_deadline=remote,
        settings=dict(settings),
        deadlines=deadlines(getattr(provider, "deadlines", {})),
        poll=checked_poll(getattr(provider, "poll", {})),
        timeout=timeout,
        secret_env=_names(getattr(provider, "secret_env", ()), "secret_env"),
        redact_fields=_names(getattr(provider, "redact_fields", ()), "redact_fields"),
        own_fields=_names(getattr(provider, "own_fields", ()), "own_fields"),
        **_census(provider, name),
    )


def _census(provider: CodeProvider, name: str) -> dict[str, Any]:
    """What the provider's census sees, and what its marker is (no `list_jobs`: nothing)."""
    if not callable(getattr(provider, "list_jobs", None)):
        return {}
    marker = getattr(provider, "census_marker", Marker.OPERATION)
    if not isinstance(marker, Marker):
        raise InvalidInput(f"{name!r}: `census_marker` must be a Marker")
    sees = getattr(provider, "census_sees", None) or (
        "every job of its own listing, newest first, our marker read on each"
    )
    if not isinstance(sees, str):
        raise InvalidInput(f"{name!r}: `census_sees` must be one sentence (a string)")
    return {"census": sees, "census_marker": marker}


def deadlines(table: Mapping[str, Any]) -> dict[str, timedelta]:
    """A provider's deadlines over the provider file's defaults."""
    if not isinstance(table, Mapping):
        raise InvalidInput("`deadlines` must map create / result / cancel to durations")
    unknown = set(table) - set(DEFAULT_DEADLINES)
    if unknown:
        raise InvalidInput(f"unknown deadlines {sorted(unknown)}; use create, result, cancel")
    merged: dict[str, Any] = {**DEFAULT_DEADLINES, **table}
    return {k: v if isinstance(v, timedelta) else parse_duration(v) for k, v in merged.items()}


def checked_poll(table: Mapping[str, Any]) -> dict[str, Any]:
    """The `[poll]` table, checked by the provider file's own rules (and defaults)."""
    if not isinstance(table, Mapping):
        raise InvalidInput("`poll` must be a table of the provider file's [poll] keys")
    poll = {str(k): v for k, v in table.items()}
    unknown = set(poll) - set(keys_of(PollKeys))
    if unknown:
        raise InvalidInput(f"unknown [poll] key {sorted(unknown)[0]!r}")
    poll_rules(poll)
    return poll


def _names(values: Any, what: str) -> tuple[str, ...]:
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise InvalidInput(f"`{what}` must be a list of names")
    if not all(isinstance(v, str) and v for v in values):
        raise InvalidInput(f"`{what}` must be a list of non-empty names")
    return tuple(values)


def with_file(spec: CodeSpec, doc: Mapping[str, Any], where: str) -> CodeSpec:
    """`spec` with a provider file's `[deadlines]` and `[poll]` over the provider's own (its
    `[settings]` went to the factory already)."""
    unknown = sorted(set(doc) - _FILE_KEYS)
    if unknown:
        raise ProviderConfigError(
            f"{where}: unknown key {unknown[0]!r} in a code provider's file; known keys: "
            f"{', '.join(sorted(_FILE_KEYS))}"
        )
    try:
        return replace(
            spec,
            deadlines=deadlines({**spec.deadlines, **_table(doc, "deadlines")}),
            poll=checked_poll({**spec.poll, **_table(doc, "poll")}),
        )
    except InvalidInput as exc:
        raise ProviderConfigError(f"{where}: {exc}") from None


def file_settings(doc: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The `[settings]` table of a code provider's file."""
    try:
        return _table(doc, "settings")
    except InvalidInput as exc:
        raise ProviderConfigError(f"{where}: {exc}") from None


def _table(doc: Mapping[str, Any], name: str) -> dict[str, Any]:
    value = doc.get(name, {})
    if not isinstance(value, dict):
        raise InvalidInput(f"[{name}] must be a table")
    return value


def stored_spec(op: Operation) -> CodeSpec:
    """The code provider `op` was submitted to, as stored: for a retry-as-new, which needs
    no plug-in (the new operation is driven like the old one)."""
    if not is_code_document(op.provider_config):
        raise ProviderConfigError(f"{op.operation_id} was not submitted to a code provider")
    return stored_document(op.provider_config, capabilities=op.capabilities)


def stored_document(
    doc: Mapping[str, Any], *, capabilities: Capabilities | None = None
) -> CodeSpec:
    """A stored code provider document read back (`CodeSpec.document`'s inverse)."""
    return CodeSpec(
        name=str(doc["code"]),
        version=str(doc.get("version", "")),
        capabilities=capabilities or Capabilities(),
        settings=dict(doc.get("settings") or {}),
        deadlines=deadlines(doc.get("deadlines") or {}),
        poll=dict(doc.get("poll") or {}),
        timeout=parse_duration(doc["timeout"]) if "timeout" in doc else DEFAULT_TIMEOUT,
        secret_env=tuple(doc.get("secret_env") or ()),
        redact_fields=tuple((doc.get("redact") or {}).get("fields") or ()),
        remote_deadline=remote_deadline(doc.get("deadline"), code=True),
    )


def deadline_table(deadline: RemoteDeadline) -> dict[str, Any]:
    """A code provider's remote deadline as its stored document keeps it (the provider
    file's `[create] deadline` keys)."""
    return {
        "field": deadline.field,
        "unit": deadline.unit,
        "format": deadline.form.value,
        "step": deadline.step,
        "min": deadline.least,
        **({"max": deadline.most} if deadline.most is not None else {}),
    }
