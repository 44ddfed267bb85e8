"""A lease as the lease history keeps it: one owner's tenure of one operation."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, kw_only=True)
class Lease:
    operation_id: str
    fence: int
    owner: str
    acquired_at: datetime
    expires_at: datetime
    released_at: datetime | None
    # The same tenure on the ledger's one clock (seconds on `clock`: the PostgreSQL server's
    # epoch, or on SQLite this machine's boot clock): what decides when a lease ends, and
    # what shows that no two owners overlapped whatever the holders' own clocks said. None
    # for a lease taken before migration 0012.
    clock: str | None = None
    clock_acquired: float | None = None
    clock_expires: float | None = None
    clock_released: float | None = None


CLOCK_FIELDS = ("clock", "clock_acquired", "clock_expires", "clock_released")
