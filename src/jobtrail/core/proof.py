"""What the at-most-once promise rests on, in one sentence, from a provider's declared
capabilities: the words `provider check` says and `explain` repeats (one home, DESIGN)."""

from __future__ import annotations

from datetime import timedelta

from jobtrail.core.durations import format_duration
from jobtrail.core.model import Capabilities


def absence_rule(caps: Capabilities, create_deadline: timedelta) -> str | None:
    """When a lookup that finds nothing proves that no job exists, or None without a lookup."""
    if not caps.lookup:
        return None
    window = caps.absent_after
    if window is None:
        return (
            "a lookup that finds nothing never proves that no job exists: after a lost create "
            "answer the lookup cannot resolve, a person decides at the create deadline "
            "(needs_human); nothing is sent again on its own"
        )
    shown = format_duration(timedelta(seconds=window))
    rule = (
        f"at-most-once holds if a new job is visible in the lookup within {shown}: a lookup "
        f"that finds nothing proves no job exists only {shown} after the create was last "
        "sent; until then jobtrail looks again"
    )
    if window >= create_deadline.total_seconds():
        rule += (
            f", and the create deadline ({format_duration(create_deadline)}) comes first, so "
            "such a miss goes to a person (needs_human) instead"
        )
    return rule
