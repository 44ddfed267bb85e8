"""The ledger: the one place where the pure core meets the store.

Every change to an operation is decided by `core.apply` and written by `store.commit` with
its transitions, attempt, observations and audit entries in one transaction. Services and
surfaces (CLI, MCP, worker, webhooks, dashboard) call these verbs and hold no rules of their
own. The verbs live by what they do: asking (asking.py), reading (reading.py), people's and
agents' requests (deciding.py), driving under a lease (driving.py), task handles
(handles.py), censuses (census.py), notices to people (notices.py), on a common base
(common.py).
"""

from __future__ import annotations

from jobtrail.ledger.census import Censuses
from jobtrail.ledger.deciding import Deciding
from jobtrail.ledger.driving import Driving
from jobtrail.ledger.handles import Handles
from jobtrail.ledger.notices import Noticing
from jobtrail.ledger.reading import Reading


class Ledger(Deciding, Reading, Driving, Handles, Censuses, Noticing):
    """The ledger's verbs, on one store (see the modules above)."""
