"""The public names are pinned (httpx's tests/test_exported_members.py): `jobtrail`,
`jobtrail.plugin` and `jobtrail.testing` export exactly these, each importable. A name added
or removed here is a change to the public API: it goes with a CHANGELOG line and the docs."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest

PUBLIC = {
    "jobtrail": [
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
    ],
    "jobtrail.plugin": [
        "Accepted",
        "Ambiguous",
        "AttemptKind",
        "Basis",
        "Body",
        "CancelAcknowledged",
        "Capabilities",
        "CodeProvider",
        "Factory",
        "Fetched",
        "Form",
        "Found",
        "Idempotency",
        "ItemCounts",
        "ItemsRule",
        "Listed",
        "Listing",
        "Marker",
        "NotPermitted",
        "Observed",
        "Operation",
        "Provider",
        "ProviderConfigError",
        "Rejected",
        "RemoteDeadline",
        "RemoteStatus",
        "Reply",
        "ResultChecked",
        "ResultMissing",
        "ResultMode",
        "ResultSpec",
        "ResultSummary",
        "SyncResult",
        "Throttled",
        "outcomes",
    ],
    "jobtrail.testing": [
        "AttemptKind",
        "Capabilities",
        "Fetched",
        "RemoteStatus",
        "Reply",
        "ScriptedCall",
        "ScriptedProvider",
        "VirtualClock",
        "jobtrail_simulator",
        "outcomes",
        "running_simulator",
    ],
}


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_the_public_names_are_exactly_the_pinned_ones(name: str) -> None:
    """`__all__` is the pinned list, sorted, and every name in it can be imported."""
    module = importlib.import_module(name)
    assert module.__all__ == PUBLIC[name]
    for member in module.__all__:
        assert getattr(module, member) is not None, f"{name}.{member} cannot be imported"


@pytest.mark.parametrize("name", ["jobtrail", "jobtrail.plugin"])
def test_nothing_public_is_left_out_of_all(name: str) -> None:
    """Every public attribute of `jobtrail` and `jobtrail.plugin` other than submodules
    (and `from __future__` / typing helpers) is in `__all__`: no name is public by accident."""
    module = importlib.import_module(name)
    helpers = {"annotations", "TYPE_CHECKING"}
    public = {
        member
        for member, value in vars(module).items()
        if not member.startswith("_")
        and member not in helpers
        and not isinstance(value, ModuleType)
    }
    assert public <= set(module.__all__)
