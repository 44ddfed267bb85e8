"""The store interface, in domain terms. Every implementation passes tests/contract."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

from jobtrail.audit import AuditEntry, AuditRow
from jobtrail.core.model import Attempt, Observation, Operation, Transition
from jobtrail.core.states import State

if TYPE_CHECKING:
    from jobtrail.store.finding import OperationPage, OperationQuery
    from jobtrail.store.retention import Keep, Pruned


@dataclass(frozen=True, kw_only=True)
class Change:
    """Everything one step changes for one operation, committed atomically.

    `operation` is the new record, carrying the version it was derived from. An owner (a
    worker holding the lease) passes its fencing number: the write is refused if the lease
    was taken over since. Anyone else passes None: then the write only checks the version,
    and never moves the poll time of an operation that a worker holds.
    """

    operation: Operation
    owner_fence: int | None = None
    before: Operation | None = None  # the record `operation` was derived from, if known
    transitions: Sequence[Transition] = ()
    observations: Sequence[Observation] = ()
    attempt_started: Attempt | None = None
    attempt_finished: Attempt | None = None
    audit: Sequence[AuditEntry] = ()
    release: bool = False
    # A non-owner asking for a status read now: if a worker holds the operation, its
    # releasing write makes the operation due at once rather than at its own next time.
    request_poll: bool = False


class Verdict(StrEnum):
    OK = "ok"
    FENCED_OUT = "fenced_out"  # the lease moved on: this writer must stop
    STALE = "stale"  # someone else changed the record first: reload and decide again
    DUPLICATE_EVENT = "duplicate_event"  # an observation's event id was seen before


@dataclass(frozen=True, kw_only=True)
class CommitResult:
    verdict: Verdict
    operation: Operation | None = None  # the record as stored after the write (or now, if stale)


@dataclass(frozen=True, kw_only=True)
class Claim:
    operation: Operation
    was_due: datetime  # the next poll time the operation had when claimed


@dataclass(frozen=True, kw_only=True)
class Lease:
    operation_id: str
    fence: int
    owner: str
    acquired_at: datetime
    expires_at: datetime
    released_at: datetime | None


class Store(Protocol):
    """Durable home of operations, their history, attempts, observations, leases and audit."""

    async def create_operation(self, op: Operation, audit: Sequence[AuditEntry]) -> Operation:
        """Insert a new operation; if its key exists, return the existing one unchanged."""
        ...

    async def get(self, operation_id: str) -> Operation | None: ...

    async def get_by_key(self, key: str) -> Operation | None: ...

    async def find_by_remote_job(self, provider: str, remote_job_id: str) -> Operation | None:
        """The operation that holds this provider's remote job (the newest, should two
        claim it), or None: how a webhook event finds its operation."""
        ...

    async def list_operations(
        self, *, states: Sequence[State] = (), limit: int = 50
    ) -> list[Operation]:
        """Newest first."""
        ...

    async def count_by_state(self) -> dict[State, int]: ...

    async def find_operations(self, query: OperationQuery) -> OperationPage:
        """One page of the operations matching `query`, newest first, and how many match
        in all (for people: the dashboard's filters and paging)."""
        ...

    async def history(self, operation_id: str) -> list[Transition]: ...

    async def attempts(self, operation_id: str) -> list[Attempt]: ...

    async def observations(self, operation_id: str) -> list[Observation]: ...

    async def commit(self, changes: Sequence[Change]) -> list[CommitResult]:
        """Apply many operations' changes in one transaction (group commit), each guarded
        by its version (and fence); a refused change writes nothing but, for a fenced-out
        owner, the finished attempt and its audit entries, which are facts regardless."""
        ...

    async def claim_due(
        self,
        owner: str,
        now: datetime,
        limit: int,
        lease_for: timedelta,
        only: str | None = None,
    ) -> list[Claim]:
        """Lease up to `limit` due operations (oldest due first), raising each fence;
        `only` restricts the claim to one operation id."""
        ...

    async def renew(
        self, operation_id: str, fence: int, now: datetime, lease_for: timedelta
    ) -> bool:
        """Extend a held lease; False if the fence moved on."""
        ...

    async def release(
        self, operation_id: str, fence: int, now: datetime, due: datetime | None
    ) -> bool:
        """Give a lease back at `now`, next due at `due` (None: nothing left to do), without
        changing anything else; False if the fence moved on."""
        ...

    async def next_due(self) -> datetime | None:
        """The earliest next poll time of any operation, or None."""
        ...

    async def leases(self, operation_id: str | None = None) -> list[Lease]: ...

    async def audit_rows(self, operation_id: str | None = None) -> list[AuditRow]: ...

    async def append_audit(self, entries: Sequence[AuditEntry]) -> None: ...

    async def prune(
        self, finished_before: datetime, now: datetime, actor: str, keep: Keep
    ) -> Pruned:
        """Remove the finished operations (retention.PRUNABLE, no lease, nothing scheduled)
        last changed before `finished_before`, with everything they own, and append a
        checkpoint to the audit chain, in one transaction; `keep` (which archives what is
        removed) runs before the commit, and nothing is removed if it raises."""
        ...

    async def close(self) -> None: ...
