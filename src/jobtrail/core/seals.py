"""What seals a closed observation run in the audit chain (`observation.run` entries).

A run's row is updated in place while reads fold into it, so the chain covers it only once
it closes. Entries before migration 0017 copied the run's final values; from 0017 on the
entry holds the run's source, first read (`first_ref`) and count, and the sha256 of its final
values (`run_values`), which `audit verify` checks the row against (jobtrail.ledger.bindings).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from jobtrail.core.audit import digest
from jobtrail.core.model import Observation


def run_values(ob: Observation, closed_at: datetime) -> dict[str, Any]:
    """A closed run's final values: what entries before 0017 copied (less the usage and the
    event id, bound since)."""
    return {
        "source": ob.source,
        "remote_state": ob.remote_state,
        "remote_status": ob.remote_status.value,
        "provider_updated_at": ob.provider_updated_at,
        "first_seen": ob.observed_at.isoformat(),
        "last_seen": ob.seen_last.isoformat(),
        "count": ob.seen_count,
        "first_ref": ob.ref,
        "last_request_id": ob.request_id,
        "first_progress": ob.progress,
        "last_progress": ob.last_progress,
        "closed_at": closed_at.isoformat(),
        "usage": ob.usage,
        "event_id": ob.event_id,
    }


def run_seal(ob: Observation, closed_at: datetime) -> dict[str, Any]:
    """The data of the entry that seals a run closed at `closed_at`."""
    return {
        "source": ob.source,
        "first_ref": ob.ref,
        "count": ob.seen_count,
        "run_sha256": digest(run_values(ob, closed_at)),
    }
