"""The store interface, in domain terms. Every implementation passes tests/contract."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from jobtrail.core.audit import AuditEntry, AuditRow
from jobtrail.core.bulk import BulkRecord
from jobtrail.core.lateness import LatenessCount
from jobtrail.core.model import Attempt, Observation, Operation, Transition
from jobtrail.core.notices import DeliveryAttempt, Notice, Outboxed
from jobtrail.core.states import State
from jobtrail.store.codec import storable
from jobtrail.store.leases import Lease

if TYPE_CHECKING:
    from jobtrail.core.tasks import TaskHandle
    from jobtrail.store.finding import OperationPage, OperationQuery
    from jobtrail.store.retention import Bind, Keep, PackDictionary, Pruned, Seal


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
    # A safe read (status, result GET), recorded once with its outcome and no intent before.
    # Its status observation folds into the operation's open observation run when that run
    # saw the same remote state; then the read leaves no row of its own. Otherwise the
    # attempt is stored (and the open run, if any, is closed): errors and changes are facts.
    safe_read: Attempt | None = None
    audit: Sequence[AuditEntry] = ()
    release: bool = False
    # A non-owner asking for a status read now: if a worker holds the operation, its
    # releasing write makes the operation due at once rather than at its own next time.
    request_poll: bool = False
    # The notices to people this change raises (core/notices.py), written with it in its
    # transaction into the outbox, when it is applied.
    notices: Sequence[Notice] = ()


def folds(change: Change) -> bool:
    """Whether `change` is a status read alone, which the store folds into the operation's
    open observation run if that run saw the same remote state. The open run is the last
    status read, whose remote state the record holds, so a read of another state (against
    the record it was derived from) is known not to fold without asking the database."""
    before = change.before
    return (
        change.safe_read is not None
        and len(change.observations) == 1
        and change.observations[0].source == "status"
        and not change.transitions
        and change.attempt_started is None
        and change.attempt_finished is None
        and not change.operation.state.ends_automation
        and (
            before is None
            or (
                storable(before.remote_state) == storable(change.observations[0].remote_state)
                and before.remote_status is change.observations[0].remote_status
            )
        )
    )


# No status read is made before a remote job is known, so no run can be open in these.
_NO_RUN_YET = frozenset({State.CREATE_PENDING, State.CREATE_UNKNOWN, State.RECONCILIATION})


def closes_run(change: Change) -> bool:
    """Whether `change` (not folded) records a fact that ends the open observation run, if
    one can be open."""
    if change.before is not None and change.before.state in _NO_RUN_YET:
        return False
    return bool(
        change.observations
        or change.transitions
        or change.attempt_started is not None
        or change.attempt_finished is not None
        or change.safe_read is not None
    )


def must_sync(change: Change) -> bool:
    """Whether `change` must reach stable storage before its writer goes on. Everything
    does but a safe read that moves no state: losing one to a power cut loses a read that
    the next owner makes again (or a folded read's counters), never an intent, a
    transition, a decision or a result. Claims, renewals and releases need no sync either:
    their holder dies with the machine, and any later synced write carries them along."""
    return (
        change.safe_read is None
        or bool(change.transitions)
        or change.attempt_started is not None
        or change.attempt_finished is not None
    )


class Verdict(StrEnum):
    OK = "ok"
    FENCED_OUT = "fenced_out"  # the lease moved on: this writer must stop
    STALE = "stale"  # someone else changed the record first: reload and decide again
    DUPLICATE_EVENT = "duplicate_event"  # an observation's event id was seen before


@dataclass(frozen=True, kw_only=True)
class CommitResult:
    verdict: Verdict
    operation: Operation | None = None  # the record as stored after the write (or now, if stale)


# The commit verdict rules, written once for every store. A change's guarded update (by
# version, and by fence for an owner) either matches its row (OK) or is refused, and then:


def refusal(change: Change, current: Operation | None) -> Verdict:
    """The verdict on a refused change, given the record as stored now: FENCED_OUT when the
    writer is an owner whose fence moved on (the lease was taken over: it must stop), else
    STALE (someone else changed the record first, or it is gone: reload and decide again)."""
    if current is not None and change.owner_fence not in (None, current.fence):
        return Verdict.FENCED_OUT
    return Verdict.STALE


def kept_when_refused(change: Change, verdict: Verdict) -> Attempt | None:
    """What a refused change still records: a fenced-out owner's finished call, whose
    outcome is a fact whoever holds the lease now. A stale writer applies its outcome
    again, so it records nothing yet; a safe read is never recorded by a refused change."""
    if verdict is Verdict.FENCED_OUT:
        return change.attempt_finished
    return None


def audited(change: Change, verdict: Verdict, kind: str) -> bool:
    """Whether an audit entry of `kind` that the change carries is appended: every entry of
    an accepted change; of a fenced-out owner's, only the outcome of the call it made (the
    attempt it keeps, bound by that entry), since nothing else it carries was applied (its
    transitions, the intent of a call it will never make); a fenced-out safe read had no
    effect and leaves nothing."""
    if verdict is Verdict.OK:
        return True
    return (
        verdict is Verdict.FENCED_OUT
        and kind == "attempt.outcome"
        and change.safe_read is None
        and change.attempt_finished is not None
    )


@dataclass(frozen=True, kw_only=True)
class Claim:
    operation: Operation
    # When the operation became due: its poll time, or a taken-over lease's expiry. A claim
    # never changes the operation's next_poll_at (the lease lives in its own columns).
    was_due: datetime


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
        owner, the finished attempt and its outcome's audit entry, which are facts
        regardless (a fenced-out safe read had no effect and leaves nothing): `refusal`,
        `kept_when_refused` and `audited` above. A transaction retried after a deadlock
        starts from nothing of its first try.

        Observation runs: a change that records anything but a folded read (an observation
        that does not fold, an attempt, a transition) closes the operation's open run first,
        and the run is sealed by an `observation.run` audit entry with its final values; a
        status run is also closed when the change ends automation for the operation."""
        ...

    def ledger_now(self) -> datetime:
        """The time on the ledger's clock (store/ledger_clock.py): PostgreSQL's server clock,
        or on SQLite the machine's wall clock as every process on it reads it alike. Every
        judgment of time that decides safety or an end is made on it, never on a worker's
        own clock."""
        ...

    async def claim_due(
        self,
        owner: str,
        now: datetime,
        limit: int,
        lease_for: timedelta,
        only: str | None = None,
        code: Collection[str] | None = None,
    ) -> list[Claim]:
        """Lease up to `limit` due operations (oldest due first), raising each fence;
        `only` restricts the claim to one operation id. `code` (None: no filter) names the
        code providers the claimer has: an operation of any other code provider is never
        claimed, whatever its due time (HTTP operations always are). Due means the poll
        time has come while unleased, or the lease has expired. A lease row is written when
        the operation changes hands; the same owner claiming it again extends its own row."""
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

    async def next_due(self, code: Collection[str] | None = None) -> datetime | None:
        """The earliest time any operation becomes due (poll time, or lease expiry while
        leased), or None; with `code`, only among the operations `claim_due` would claim
        with it."""
        ...

    async def leases(self, operation_id: str | None = None) -> list[Lease]: ...

    async def audit_rows(self, operation_id: str | None = None) -> list[AuditRow]: ...

    async def append_audit(self, entries: Sequence[AuditEntry]) -> None: ...

    async def keying_problem(self) -> str | None:
        """Why this store's audit key cannot verify or continue the ledger's chain (keyed
        with another key, or not keyed at all: store/chain.py), or None when it can. Every
        write is refused with that sentence; reads are not."""
        ...

    async def prune(
        self,
        finished_before: datetime,
        now: datetime,
        actor: str,
        keep: Keep,
        bind: Bind | None = None,
    ) -> Pruned:
        """Remove the finished operations (retention.PRUNABLE, no lease, nothing scheduled)
        last changed before `finished_before`, with everything they own (their task handles
        too), and append a checkpoint to the audit chain, in one transaction; `keep` (which
        archives what is removed) runs before the commit, and nothing is removed if it
        raises. Task handles expired by `now` go as well; their operations stay. `bind`
        gives what the checkpoint binds of that archive (every line of it)."""
        ...

    async def pack(
        self, finished_before: datetime, now: datetime, actor: str, seal: Seal, limit: int
    ) -> Pruned:
        """`prune` of at most `limit` operations (those with no notice still due, too), each
        replaced in place by the packed row `seal` makes, which the checkpoint binds
        (migration 0023); one transaction: a failure packs nothing of the batch."""
        ...

    async def packed(self, operation_id: str | None = None) -> list[tuple[str, int | None, bytes]]:
        """The packed rows (operation_id, dictionary_id, data): `operation_id`'s, or all."""
        ...

    def audit_link(self, prev_hash: str, entry: str) -> str:
        """The hash (hex) of `entry` linked to `prev_hash` under this store's audit key: how
        entries out of the log (packed ones) are checked against their own hashes."""
        ...

    async def pack_dictionaries(self) -> dict[int, PackDictionary]:
        """The zstd dictionaries packing trained, by id."""
        ...

    async def add_task(self, handle: TaskHandle) -> None:
        """Record a task handle durably (committed before this returns); its operation
        must exist."""
        ...

    async def task(self, task_hash: str) -> TaskHandle | None:
        """The task handle whose id hashes to `task_hash`, expired or not, or None."""
        ...

    async def add_bulk(self, record: BulkRecord) -> None:
        """Record a bulk action once; a second record with its id changes nothing."""
        ...

    async def bulk(self, bulk_id: str) -> BulkRecord | None: ...

    async def add_notice(self, notice: Notice) -> None:
        """Write one notice into the outbox alone; a second with its id changes nothing."""
        ...

    async def claim_notices(self, now: datetime, until: datetime, limit: int) -> list[Outboxed]:
        """Up to `limit` notices due by `now`, each claimed until `until`."""
        ...

    async def finish_notice(self, box: Outboxed, attempts: Sequence[DeliveryAttempt]) -> bool:
        """Record a delivery round's attempts and the notice after it; False if its claim
        was taken over meanwhile."""
        ...

    async def notices(
        self, operation_id: str | None = None, limit: int = 1000
    ) -> list[Outboxed]: ...

    async def delivery_attempts(self, event_id: str) -> list[DeliveryAttempt]: ...

    async def metric_rows(self) -> dict[str, list[Any]]:
        """The rows behind the metrics, by query name (store/notices.py), one transaction."""
        ...

    async def add_poll_lateness(self, counts: Sequence[LatenessCount]) -> None:
        """Add a worker's poll lateness counts to the stored ones (one statement)."""
        ...

    async def notice_backlog(self) -> int:
        """How many notices wait for delivery."""
        ...

    async def close(self) -> None: ...
