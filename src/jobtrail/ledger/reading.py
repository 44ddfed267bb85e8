"""Reading the ledger: operations by id or key, and what their audited history says of them
(forged states, requests and results)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobtrail.core.model import (
    Operation,
    Transition,
)
from jobtrail.core.retry import on_stale
from jobtrail.errors import (
    NotFound,
)
from jobtrail.ledger.base import EVERY, LedgerBase
from jobtrail.ledger.histories import (
    Forgery,
    audited_requests,
    audited_results,
    audited_steps,
    request_problem,
    result_problem,
)
from jobtrail.ledger.histories import check as check_history

if TYPE_CHECKING:  # imported where used: reading the ledger (`status`) needs no provider,
    # nor the core's apply (its planner, schedules and evidence rules)
    pass


class Reading(LedgerBase):
    async def find(self, ref: str) -> Operation:
        """An operation by its id or, when no id matches, by its key."""
        op = await self.store.get(ref) or await self.store.get_by_key(ref)
        if op is None:
            raise NotFound(f"no operation with the id or key {ref!r} in this ledger")
        return op

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

    async def result_problem(self, op: Operation) -> str | None:
        """Why `op`'s stored result summary is not the one collected (its digest and size
        differ from those its audited collection recorded), or None. Every reader of a
        result asks this before serving it."""
        rows = await self.store.audit_rows(op.operation_id)
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
