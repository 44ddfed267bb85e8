"""jobtrail: a durable, auditable ledger for long-running jobs on third-party APIs.

The public Python API is what this module exports (`__all__`), documented in
docs/python.md:

    Client        submit, wait, cancel, result, explain, resolve, extend (asyncio)
    SyncClient    the same methods without `await`, for scripts and notebooks
    Operation     an operation's record, as the ledger holds it (read-only: frozen)
    State         its local states (`State.SUCCEEDED`, `state.ends_automation`)
    Result        a collected result: validation summary, per-item counts, content
    ItemCounts, ResultSummary, ProviderSpec, and the exception tree of `jobtrail.errors`

`jobtrail.testing` (ScriptedProvider, VirtualClock, the simulator fixture) is public too,
for users' own tests; code providers import what they need from `jobtrail.plugin` and
follow docs/code-providers.md.

Everything else (`jobtrail.core`, `.ledger`, `.store`, `.providers`, `.worker`, ...) is
internal: importable, but free to change between versions without notice.

`import jobtrail` stays cheap: the client and everything it needs (aiohttp, psycopg) are
imported on first use of `jobtrail.Client`, `SyncClient`, `Result` or `ProviderSpec`.
"""

from __future__ import annotations

from jobtrail.errors import (
    ActionRefused,
    ClientClosed,
    ConcurrentUpdate,
    CredentialMissing,
    InvalidInput,
    JobtrailError,
    KeyConflict,
    LostOwnership,
    MissingCredentialWarning,
    NotFound,
    NotPermitted,
    ProviderConfigError,
    ProviderMissing,
    ResultCorrupted,
    ResultError,
    ResultTooLarge,
    StoreError,
    TransitionRefused,
    WaitTimedOut,
)

TYPE_CHECKING = False  # not typing's: importing typing costs every start-up (`--version`)
if TYPE_CHECKING:
    from typing import Any

    from jobtrail.client import Client, Result, SyncClient
    from jobtrail.core.model import ItemCounts, Operation, ResultSummary
    from jobtrail.core.states import State
    from jobtrail.providers.file.spec import ProviderSpec

__all__ = [
    "ActionRefused",
    "Client",
    "ClientClosed",
    "ConcurrentUpdate",
    "CredentialMissing",
    "InvalidInput",
    "ItemCounts",
    "JobtrailError",
    "KeyConflict",
    "LostOwnership",
    "MissingCredentialWarning",
    "NotFound",
    "NotPermitted",
    "Operation",
    "ProviderConfigError",
    "ProviderMissing",
    "ProviderSpec",
    "Result",
    "ResultCorrupted",
    "ResultError",
    "ResultSummary",
    "ResultTooLarge",
    "State",
    "StoreError",
    "SyncClient",
    "TransitionRefused",
    "WaitTimedOut",
    "__version__",
]

_LAZY = {
    "Client": "jobtrail.client",
    "SyncClient": "jobtrail.client",
    "Result": "jobtrail.client",
    "ProviderSpec": "jobtrail.providers.file.spec",
    # The record types too: `jobtrail.cli` (a subpackage) runs this module, and
    # `jobtrail --version` should not pay for the core's dataclasses.
    "ItemCounts": "jobtrail.core.model",
    "Operation": "jobtrail.core.model",
    "ResultSummary": "jobtrail.core.model",
    "State": "jobtrail.core.states",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name == "__version__":
        from jobtrail._version import VERSION

        found = VERSION
        globals()["__version__"] = found
        return found
    raise AttributeError(f"module 'jobtrail' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
