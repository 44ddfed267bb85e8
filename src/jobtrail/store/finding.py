"""Finding operations for people (the dashboard): filters, a page, and how many match.

One WHERE clause for both stores, built from fixed column names and placeholders only: no
value ever becomes SQL text. The dialects differ in the placeholder and the time encoding.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from jobtrail.core.model import Operation
from jobtrail.core.states import State


@dataclass(frozen=True, kw_only=True)
class OperationQuery:
    states: Sequence[State] = ()
    provider: str | None = None
    actor: str | None = None
    key: str | None = None  # the exact operation key
    created_from: datetime | None = None  # inclusive
    created_until: datetime | None = None  # exclusive
    # Late: due (or, while leased, with a lease that expires) before this time. A store
    # keeps a leased operation's lease expiry in its next poll time, so one test finds both
    # overdue polls and leases held past their time.
    late_before: datetime | None = None
    offset: int = 0
    limit: int = 50


@dataclass(frozen=True, kw_only=True)
class OperationPage:
    operations: list[Operation] = field(default_factory=list)
    total: int = 0  # how many operations match, on every page


def where(
    query: OperationQuery, mark: str, time: Callable[[datetime], Any]
) -> tuple[str, list[Any]]:
    """` WHERE …` (or "") and its arguments, with `mark` as the placeholder."""
    parts: list[str] = []
    args: list[Any] = []
    if query.states:
        parts.append(f"state IN ({', '.join(mark for _ in query.states)})")
        args.extend(s.value for s in query.states)
    for column, value in (
        ("provider", query.provider),
        ("actor", query.actor),
        ("op_key", query.key),
    ):
        if value:
            parts.append(f"{column} = {mark}")
            args.append(value)
    if query.created_from is not None:
        parts.append(f"created_at >= {mark}")
        args.append(time(query.created_from))
    if query.created_until is not None:
        parts.append(f"created_at < {mark}")
        args.append(time(query.created_until))
    if query.late_before is not None:
        parts.append(f"next_poll_at IS NOT NULL AND next_poll_at < {mark}")
        args.append(time(query.late_before))
    return (" WHERE " + " AND ".join(parts) if parts else ""), args
