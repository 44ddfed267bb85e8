"""The ledger: the one reader and writer of the store; every surface and service goes
through its verbs (see ledger/ledger.py)."""

from jobtrail.ledger.ledger import Ledger, decision_action, prepare_submission

__all__ = ["Ledger", "decision_action", "prepare_submission"]
