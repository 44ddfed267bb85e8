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

from typing import TYPE_CHECKING, Any

from jobtrail.errors import (
    ActionRefused,
    ClientClosed,
    ConcurrentUpdate,
    InvalidInput,
    JobtrailError,
    KeyConflict,
    LostOwnership,
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

if TYPE_CHECKING:
    from jobtrail.client import Client, Result, SyncClient
    from jobtrail.core.model import ItemCounts, Operation, ResultSummary
    from jobtrail.core.states import State
    from jobtrail.providers.spec import ProviderSpec

__all__ = [
    "ActionRefused",
    "Client",
    "ClientClosed",
    "ConcurrentUpdate",
    "InvalidInput",
    "ItemCounts",
    "JobtrailError",
    "KeyConflict",
    "LostOwnership",
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
    "ProviderSpec": "jobtrail.providers.spec",
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
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("jobtrail")
        except PackageNotFoundError:  # run from a source tree that was never installed
            found = "0+unknown"
        globals()["__version__"] = found
        return found
    raise AttributeError(f"module 'jobtrail' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
