"""Everything a code provider's author imports (docs/code-providers.md), in one public place.

A plug-in imports from here only: the names below are the contract and keep their meaning
between versions; the modules they come from are internal and may move.

    from jobtrail.plugin import Capabilities, Reply, outcomes as o, ...
"""

from __future__ import annotations

from jobtrail.core import outcomes
from jobtrail.core.census import Listed
from jobtrail.core.model import (
    AttemptKind,
    Capabilities,
    Idempotency,
    ItemCounts,
    Operation,
    ResultMode,
    ResultSummary,
)
from jobtrail.core.outcomes import (
    Accepted,
    Ambiguous,
    Basis,
    Body,
    CancelAcknowledged,
    Found,
    Observed,
    Rejected,
    ResultChecked,
    ResultMissing,
    SyncResult,
    Throttled,
)
from jobtrail.core.remote_deadline import Form, RemoteDeadline
from jobtrail.core.states import RemoteStatus
from jobtrail.errors import NotPermitted, ProviderConfigError
from jobtrail.providers.code.contract import CodeProvider, Factory, Listing, Marker
from jobtrail.providers.file.spec import ItemsRule, ResultSpec
from jobtrail.providers.protocol import Fetched, Provider, Reply

__all__ = [
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
]
