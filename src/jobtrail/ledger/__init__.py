"""The ledger: the one reader and writer of the store; every service and surface goes
through its verbs (ledger/ledger.py says where each kind of verb lives), and takes the
store's words it needs from here, never from jobtrail.store."""

from jobtrail.ledger.asking import prepare_submission
from jobtrail.ledger.deciding import decision_action
from jobtrail.ledger.ledger import Ledger
from jobtrail.ledger.opening import open_ledger
from jobtrail.store.base import Claim, Verdict
from jobtrail.store.finding import OperationPage, OperationQuery
from jobtrail.store.retention import PRUNABLE, Pruned
from jobtrail.store.urls import MASK, shown_url, url_passwords

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
]
