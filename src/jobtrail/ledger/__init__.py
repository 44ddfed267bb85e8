"""The ledger: the one reader and writer of the store; every service and surface goes
through its verbs (ledger/ledger.py says where each kind of verb lives), and takes the
store's words it needs from here, never from jobtrail.store.

Each name is imported when first asked for: `jobtrail status` takes `shown_url` from here
and reads through jobtrail.ledger.peek, and must not load the writing side to do so."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jobtrail.ledger.asking import prepare_submission
    from jobtrail.ledger.deciding import decision_action
    from jobtrail.ledger.ledger import Ledger
    from jobtrail.ledger.opening import open_ledger
    from jobtrail.store.changes import Claim, Verdict
    from jobtrail.store.finding import OperationPage, OperationQuery
    from jobtrail.store.retention import PRUNABLE, Pruned
    from jobtrail.store.urls import MASK, shown_url, url_passwords, without_passwords

_HOME = {
    "prepare_submission": "jobtrail.ledger.asking",
    "decision_action": "jobtrail.ledger.deciding",
    "Ledger": "jobtrail.ledger.ledger",
    "open_ledger": "jobtrail.ledger.opening",
    "Claim": "jobtrail.store.changes",
    "Verdict": "jobtrail.store.changes",
    "OperationPage": "jobtrail.store.finding",
    "OperationQuery": "jobtrail.store.finding",
    "PRUNABLE": "jobtrail.store.retention",
    "Pruned": "jobtrail.store.retention",
    "MASK": "jobtrail.store.urls",
    "shown_url": "jobtrail.store.urls",
    "url_passwords": "jobtrail.store.urls",
    "without_passwords": "jobtrail.store.urls",
}

__all__ = [
    "MASK",
    "PRUNABLE",
    "Claim",
    "Ledger",
    "OperationPage",
    "OperationQuery",
    "Pruned",
    "Verdict",
    "decision_action",
    "open_ledger",
    "prepare_submission",
    "shown_url",
    "url_passwords",
    "without_passwords",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'jobtrail.ledger' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # asked once
    return value
