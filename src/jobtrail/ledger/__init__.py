"""The ledger: the one reader and writer of the store; every service and surface goes
through its verbs (ledger/ledger.py says where each kind of verb lives)."""

from jobtrail.ledger.asking import prepare_submission
from jobtrail.ledger.deciding import decision_action
from jobtrail.ledger.ledger import Ledger

__all__ = ["Ledger", "decision_action", "prepare_submission"]
