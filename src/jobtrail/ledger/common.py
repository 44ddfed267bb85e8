"""The ledger's common part: its store, clock, randomness, action policy and redaction, the
one way a change reaches the store (`_commit`, through the redaction chokepoint), and the
audit entries every verb writes."""

from __future__ import annotations

import asyncio
import random
from datetime import datetime
from typing import TYPE_CHECKING, Any

from jobtrail.clock import Clock
from jobtrail.core.audit import AuditEntry
from jobtrail.core.model import (
    Attempt,
    Operation,
)
from jobtrail.core.redact import Redactor
from jobtrail.errors import (
    NotFound,
    NotPermitted,
)
from jobtrail.ledger.bindings import bind
from jobtrail.ledger.escalating import with_notices
from jobtrail.ledger.histories import (
    COLLECTED,
)
from jobtrail.ledger.policy import Action, ActionPolicy, kind_of
from jobtrail.ledger.redaction import Redactors, redacted, redacted_entries
from jobtrail.randomness import PooledSystemRandom
from jobtrail.store.changes import Change, CommitResult
from jobtrail.store.engine import Store
from jobtrail.store.group import GroupCommitter
from jobtrail.store.machine_clock import machine_now

if TYPE_CHECKING:
    from jobtrail.store.retention import PrunedOperation
if TYPE_CHECKING:  # imported where used: reading the ledger (`status`) needs no provider,
    # nor the core's apply (its planner, schedules and evidence rules)
    from jobtrail.core.apply import Applied, Schedule

EVERY = 2**62  # a list limit meaning "all"


class LedgerClock:
    """The ledger's clock (store/ledger_clock.py: PostgreSQL's server clock, on SQLite the
    machine's) as a jobtrail.clock.Clock: the clock a ledger, its worker and its surfaces
    read when none is given (tests give a VirtualClock, and move everything with it)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def now(self) -> datetime:
        return self._store.ledger_now()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))  # the clocks run at one rate


class LedgerBase:
    def __init__(
        self,
        store: Store,
        *,
        clock: Clock | None = None,
        rand: random.Random | None = None,
        group_commit: bool = False,
        actions: ActionPolicy | None = None,
    ) -> None:
        self.store = store
        self.actions = actions or ActionPolicy.default()
        self.clock: Clock = clock or LedgerClock(store)
        self.rand = rand or PooledSystemRandom()
        self._group = GroupCommitter(store.commit, store.prepare) if group_commit else None
        self._schedules: dict[tuple[tuple[str, str], ...], Schedule] = {}
        self._redactors = Redactors()

    def schedule(self, op: Operation) -> Schedule:
        """Scheduling for this operation, from the [poll] table of its provider file."""
        poll = op.provider_config.get("poll", {}) if isinstance(op.provider_config, dict) else {}
        shape = tuple(sorted((str(k), str(v)) for k, v in poll.items()))
        policy = self._schedules.get(shape)
        if policy is None:
            from jobtrail.core.apply import Schedule
            from jobtrail.providers.file.config import poll_rules

            rules = poll_rules(poll)
            policy = self._schedules[shape] = Schedule(
                rand=self.rand, poll=rules.backoff, bounds=rules.bounds, refusals=rules.refusals
            )
        return policy

    def now(self) -> datetime:
        """The time on the ledger's clock (LedgerClock), which every judgment of time that
        decides safety or an end is made on: the worker, `run` and the surfaces share this
        clock (a test's VirtualClock moves all of them at once)."""
        return self.clock.now()

    def stopwatch(self) -> float:
        """Seconds on the machine's boot clock (store/machine_clock.py), for measuring how
        long something took: neither a time faker inside this process nor a step of its
        clock moves it, and it runs at the ledger clock's rate."""
        return machine_now()[1]

    async def close(self) -> None:
        """Close the store under the ledger (its connections, its writer thread)."""
        await self.store.close()

    def redactor(self, op: Operation) -> Redactor:
        """What keeps `op`'s secrets out of what is stored: its provider's sensitive names and
        the secret values that provider uses now."""
        return self._redactors.for_operation(op)

    def scrub(self, change: Change) -> Change:
        """The redaction chokepoint (jobtrail.ledger.redaction): every change the ledger writes, and
        any other writer's (the webhook intake), passes here on its way to the store."""
        return redacted(change, self._redactors.for_operation(change.operation))

    async def _commit(self, change: Change) -> CommitResult:
        change = bind(self.scrub(change))  # attempt entries bind the redacted rows by hash
        change = with_notices(change, self._redactors.for_operation(change.operation))
        if self._group is not None:
            return await self._group.commit(change)
        (result,) = await self.store.commit([change])
        return result

    async def get(self, ref: str) -> Operation:
        """The operation whose id is `ref` or, when no id matches, whose key is; NotFound
        when neither. `find` answers the same question with None instead (one contract:
        `get` raises, `find` answers None; both take an id or a key)."""
        op = await self.store.get(ref) or await self.store.get_by_key(ref)
        if op is None and (packed := await self.unpacked(ref)) is not None:
            op = packed.operation
        if op is None:
            raise NotFound(f"no operation with the id or key {ref!r} in this ledger")
        return op

    async def unpacked(self, operation_id: str) -> PrunedOperation | None:
        """The packed operation `operation_id` with everything it owned (ledger/packing.py),
        or None when it is not packed."""
        found = await self.store.packed(operation_id)
        if not found:
            return None
        from jobtrail.ledger.packing import unpack  # zstandard, only for packed ledgers

        _, dictionary_id, data = found[0]
        dictionary = None
        if dictionary_id is not None:
            dictionary = (await self.store.pack_dictionaries()).get(dictionary_id)
        return unpack(data, dictionary)

    async def permit(
        self, action: Action, actor: str, op: Operation | None, *, subject: str | None = None
    ) -> None:
        """Refuse, and audit the refusal of, what the action policy does not let `actor` do
        to `op` (None: an action on no one operation, such as submit or prune)."""
        op_id, owner = (op.operation_id, op.actor) if op else (None, None)
        if self.actions.allows(action, actor, owner=owner):
            return
        data = {
            "action": action.value,
            "actor_kind": kind_of(actor).value,
            "operation_id": op_id,
            "owner": owner,
            "subject": subject,
            "policy": self.actions.source,
        }
        entry = self._entry_for(op_id, self.now(), "policy.refused", actor, data)
        redactor = self._redactors.for_operation(op) if op else Redactor()
        await self.store.append_audit(redacted_entries([entry], redactor))
        raise NotPermitted(self.actions.refusal(action, actor, op_id, owner))

    def _change(
        self,
        before: Operation,
        applied: Applied,
        fence: int | None,
        audit: list[AuditEntry],
        *,
        finished: Attempt | None = None,
        started: Attempt | None = None,
        release: bool = False,
    ) -> Change:
        op = applied.operation
        for tr in applied.transitions:
            data: dict[str, Any] = {
                "from": tr.from_state.value,
                "to": tr.to_state.value,
                "evidence": tr.evidence.value,
                "cause": tr.cause,
                "remote_job_id": tr.remote_job_id,
            }
            if tr.to_state in COLLECTED and op.result is not None:
                # the stored result is bound to the chain: every read checks it against this
                data["result"] = {"sha256": op.result.sha256, "size": op.result.size}
            audit.append(
                AuditEntry(
                    at=tr.at,
                    operation_id=op.operation_id,
                    kind="transition",
                    actor=tr.actor,
                    data=data,
                )
            )
        return Change(
            operation=op,
            owner_fence=fence,
            before=before,
            transitions=applied.transitions,
            observations=applied.observations,
            attempt_started=started,
            attempt_finished=finished,
            audit=audit,
            release=release,
        )

    def _entry(self, op: Operation, now: datetime, kind: str, actor: str, data: Any) -> AuditEntry:
        return self._entry_for(op.operation_id, now, kind, actor, data)

    def _entry_for(
        self, op_id: str | None, now: datetime, kind: str, actor: str, data: Any
    ) -> AuditEntry:
        return AuditEntry(at=now, operation_id=op_id, kind=kind, actor=actor, data=data)


def outcome_entry(attempt: Attempt) -> dict[str, Any]:
    """What the audit log keeps of a finished call, as `finish_call` writes it."""
    return {
        "attempt_id": attempt.attempt_id,
        "kind": attempt.kind.value,
        "outcome": attempt.outcome,
        "http_status": attempt.http_status,
        "provider_request_id": attempt.provider_request_id,
        "detail": attempt.detail,
    }
