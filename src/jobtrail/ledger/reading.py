"""Reading the ledger: operations by id or key, and what their audited history says of them
(forged states, requests and results)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from jobtrail.core.audit import AuditRow
from jobtrail.core.model import (
    Attempt,
    Observation,
    Operation,
    Transition,
)
from jobtrail.core.retry import on_stale
from jobtrail.core.states import State
from jobtrail.errors import (
    InvalidInput,
)
from jobtrail.ledger.bindings import edited_rows
from jobtrail.ledger.common import EVERY, LedgerBase
from jobtrail.ledger.histories import (
    Forgery,
    audited_requests,
    audited_results,
    audited_steps,
    request_problem,
    result_problem,
)
from jobtrail.ledger.histories import check as check_history
from jobtrail.ledger.policy import Action, Scope
from jobtrail.store.finding import OperationPage, OperationQuery
from jobtrail.store.retention import PrunedOperation


class Reading(LedgerBase):
    """The only way services and surfaces read what the store holds: the store is private
    to the ledger (a test holds every layer to it)."""

    async def find(self, ref: str) -> Operation | None:
        """The operation whose id is `ref` or, when no id matches, whose key is; None when
        neither (pruned, say). `get` raises NotFound instead."""
        op = await self.store.get(ref) or await self.store.get_by_key(ref)
        if op is None and (packed := await self.unpacked(ref)) is not None:
            return packed.operation
        return op

    async def list_operations(
        self, *, states: Sequence[State] = (), limit: int = 50
    ) -> list[Operation]:
        """Newest first."""
        return await self.store.list_operations(states=states, limit=limit)

    async def read_as(self, ref: str, actor: str) -> Operation:
        """The operation `ref` names (an id or a key) when the action policy lets `actor`
        read it: NotFound when there is none, NotPermitted (the refusal audited, like a
        refused action's) when `actor` may not read it."""
        op = await self.get(ref)
        await self.permit(Action.READ, actor, op)
        return op

    def may_read(self, actor: str, op: Operation) -> bool:
        """Whether the action policy lets `actor` read `op` (nothing audited)."""
        return self.actions.allows(Action.READ, actor, owner=op.actor)

    async def readable_operations(
        self, actor: str, *, states: Sequence[State] = (), limit: int = 50
    ) -> list[Operation]:
        """Newest first, only those the action policy lets `actor` read: any, its own (the
        store filters by submitter, so a page is full), or none."""
        scope = self.actions.scope(Action.READ, actor)
        if scope is Scope.ANY:
            return await self.store.list_operations(states=states, limit=limit)
        if scope is Scope.OWN:
            query = OperationQuery(states=states, actor=actor, limit=limit)
            return (await self.store.find_operations(query)).operations
        return []

    async def find_operations(self, query: OperationQuery) -> OperationPage:
        """One page of the operations matching `query`, newest first, and the total."""
        return await self.store.find_operations(query)

    async def count_by_state(self) -> dict[State, int]:
        return await self.store.count_by_state()

    # A packed operation (ledger/packing.py) has none of these rows left: they are read from
    # its packed row, only when the store has none (every live operation has a history).
    async def history(self, operation_id: str) -> list[Transition]:
        found = await self.store.history(operation_id)
        if not found and (packed := await self.unpacked(operation_id)) is not None:
            return list(packed.history)
        return found

    async def attempts(self, operation_id: str) -> list[Attempt]:
        found = await self.store.attempts(operation_id)
        if not found and (packed := await self.unpacked(operation_id)) is not None:
            return list(packed.attempts)
        return found

    async def observations(self, operation_id: str) -> list[Observation]:
        found = await self.store.observations(operation_id)
        if not found and (packed := await self.unpacked(operation_id)) is not None:
            return list(packed.observations)
        return found

    async def audit_rows(self, operation_id: str | None = None) -> list[AuditRow]:
        """The audit log's rows (one operation's, or all), in chain order: a packed
        operation's come from its packed row (all of them: the chain without them, walked
        across under the packing checkpoints, as after a prune)."""
        found = await self.store.audit_rows(operation_id)
        if operation_id is None or found:
            return found
        if (packed := await self.unpacked(operation_id)) is not None:
            return list(packed.audit)
        return found

    async def keying_problem(self) -> str | None:
        """Why this ledger's audit key cannot continue its chain, or None."""
        return await self.store.keying_problem()

    async def backup(self, destination: str | Path) -> tuple[int, int]:
        """A consistent snapshot of a SQLite ledger (operations, audit entries copied)."""
        backup = getattr(self.store, "backup", None)
        if backup is None:
            raise InvalidInput(
                "backup copies a SQLite ledger; back up a PostgreSQL ledger with pg_dump"
            )
        copied: tuple[int, int] = await backup(destination)
        return copied

    async def edited_rows(self) -> list[str]:
        """Attempt rows and closed observation runs that no longer hold what their audit
        entries bound by hash (jobtrail.ledger.bindings), or that are gone; in chain order."""
        rows = await self.store.audit_rows()  # first: an entry commits with its rows
        attempts, observations = [], {}
        for op in reversed(await self.store.list_operations(limit=EVERY)):
            attempts += await self.store.attempts(op.operation_id)
            observations[op.operation_id] = await self.store.observations(op.operation_id)
        problems, packed = await self._packed(rows)
        for item in packed:
            problems += edited_rows(
                item.audit,
                list(item.attempts),
                {item.operation.operation_id: list(item.observations)},
            )
        return edited_rows(rows, attempts, observations) + problems

    async def _packed(self, rows: list[AuditRow]) -> tuple[list[str], list[PrunedOperation]]:
        """What is wrong with the packed rows given the chain `rows`, and the packed
        operations that check out (ledger/packing.py)."""
        packed = await self.store.packed()
        if not packed:
            return [], []
        from jobtrail.ledger.packing import packed_problems

        dictionaries = await self.store.pack_dictionaries()
        return packed_problems(rows, packed, dictionaries, self.store.audit_link)

    async def forged_operations(self) -> list[Forgery]:
        """Operations whose stored state or remote job id is not what their audited history
        replays to, or whose stored request is not the one audited (see jobtrail.ledger.histories),
        oldest first."""
        read = []
        for op in reversed(await self.store.list_operations(limit=EVERY)):
            if (pair := await self._with_history(op)) is not None:
                read.append(pair)
        # Read last: a step and its audit entry commit together, so every step read above is
        # in these rows even while workers run.
        rows = await self.store.audit_rows()
        _, packed = await self._packed(rows)  # those that do not check out: `edited_rows`
        read += [(item.operation, list(item.history)) for item in packed]
        rows = rows + [row for item in packed for row in item.audit]
        audited, requests = audited_steps(rows), audited_requests(rows)
        results = audited_results(rows)
        found = []
        for op, history in read:
            problem = (
                check_history(op, history, audited)
                or request_problem(op, requests.get(op.operation_id))
                or result_problem(op, results.get(op.operation_id))
            )
            if problem is not None:
                found.append(Forgery(operation_id=op.operation_id, problem=problem))
        return found

    async def submission_problem(self, op: Operation) -> str | None:
        """Why `op`'s stored request, token or owner is not the one its submission audited
        (a row rewritten behind the ledger's back), or None. Asked before every create, so
        that what `audit verify --replay` would flag is never sent."""
        rows = await self.audit_rows(op.operation_id)
        return request_problem(op, audited_requests(rows).get(op.operation_id))

    async def result_problem(self, op: Operation) -> str | None:
        """Why `op`'s stored result summary is not the one collected (its digest and size
        differ from those its audited collection recorded), or None. Every reader of a
        result asks this before serving it."""
        rows = await self.audit_rows(op.operation_id)
        return result_problem(op, audited_results(rows).get(op.operation_id))

    async def _with_history(self, op: Operation) -> tuple[Operation, list[Transition]] | None:
        """The record and a history read at the same version (every step moves the version),
        so a live worker's step between the two reads is not taken for a forgery."""

        async def once() -> tuple[Operation | None, list[Transition]] | None:
            nonlocal op
            history = await self.store.history(op.operation_id)
            again = await self.store.get(op.operation_id)
            if again is None:
                return None, []  # pruned meanwhile
            if again.version == op.version:
                return op, history
            op = again
            return None

        async def as_it_is() -> tuple[Operation | None, list[Transition]]:
            return op, await self.store.history(op.operation_id)

        found, history = await on_stale(once, as_it_is)
        return None if found is None else (found, history)
