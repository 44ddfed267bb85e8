"""The notices a change raises (core/notices.py), attached to it on its way to the store
(`LedgerBase._commit`), so that they are written in its transaction."""

from __future__ import annotations

from dataclasses import replace

from jobtrail.core.notices import escalations
from jobtrail.core.redact import Redactor
from jobtrail.store.changes import Change


def with_notices(change: Change, r: Redactor) -> Change:
    """`change` (already through the chokepoint) with the notices its transitions raise,
    their data passed through `r` too: a notice is recorded as everything else is."""
    raised = escalations(change.operation, change.transitions)
    if not raised:
        return change
    clean = tuple(replace(n, data=r.json(dict(n.data))) for n in raised)
    return replace(change, notices=clean)
