"""What people and agents ask of an operation: a cancel intent, a human decision, a resubmit,
a bulk action's record, a prune; each through the action policy, each audited."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from jobtrail.core import outcomes as o
from jobtrail.core.allows import cancellability
from jobtrail.core.bulk import BulkRecord, ItemOutcome
from jobtrail.core.ids import short_id
from jobtrail.core.model import (
    Attempt,
    CancelIntent,
    Operation,
    ProviderKind,
    evolve,
)
from jobtrail.core.redact import Redactor
from jobtrail.core.remote_deadline import unplaced
from jobtrail.core.retry import on_stale
from jobtrail.core.states import State
from jobtrail.errors import (
    ActionRefused,
    ConcurrentUpdate,
    InvalidInput,
)
from jobtrail.ledger.asking import Asking
from jobtrail.ledger.common import outcome_entry
from jobtrail.ledger.policy import Action
from jobtrail.ledger.redaction import redacted_entries
from jobtrail.store.changes import Change, Verdict
from jobtrail.store.retention import Bind, Keep, Pruned

PACK_BATCH = 500  # operations packed per transaction


class Deciding(Asking):
    async def prune(
        self, older_than: timedelta, *, actor: str, keep: Keep, bind: Bind | None = None
    ) -> Pruned:
        """Move the operations that finished more than `older_than` ago out of the ledger,
        with everything they own, leaving a checkpoint in the audit chain (see
        store/retention.py). `keep` archives them; nothing is removed if it fails."""
        if older_than <= timedelta(0):
            raise InvalidInput("prune needs a positive age, like 30d: only the past is pruned")
        await self.permit(Action.PRUNE, actor, None)
        now = self.now()
        return await self.store.prune(now - older_than, now, actor, keep, bind)

    async def pack(
        self,
        older_than: timedelta,
        *,
        actor: str,
        batch: int = PACK_BATCH,
        after_batch: Callable[[Pruned], None] | None = None,
    ) -> list[Pruned]:
        """Pack the operations that finished more than `older_than` ago (ledger/packing.py):
        their rows replaced in place by one compressed row each, `batch` operations a
        transaction, each batch with its checkpoint; a failure loses nothing of a batch, and
        the batches before it stay packed. One Pruned per batch; `after_batch` sees each
        once it is committed."""
        from jobtrail.ledger import packing

        if older_than <= timedelta(0):
            raise InvalidInput("packing needs a positive age, like 7d: only the past is packed")
        if batch < 1:
            raise InvalidInput("a packing batch holds at least one operation")
        packing.require()
        await self.permit(Action.PRUNE, actor, None)
        now = self.now()
        done: list[Pruned] = []
        while True:
            packed = await self.store.pack(now - older_than, now, actor, packing.seal, batch)
            if not packed.operations:
                return done
            done.append(packed)
            if after_batch is not None:
                after_batch(packed)
            if len(packed.operations) < batch:
                return done

    async def cancel(
        self,
        operation_id: str,
        *,
        actor: str,
        reason: str,
        expected_effect: str | None = None,
        request_id: str | None = None,
    ) -> Operation:
        """Record the intent to cancel. The lease owner sends the cancel; nothing here claims
        that the remote job stopped. `request_id` names the request (a form's, say): asked
        again, a recorded cancel is answered as it stands."""
        if not reason.strip():
            raise InvalidInput("give a reason for the cancel; it is recorded with the intent")
        await self.permit(Action.CANCEL, actor, await self.get(operation_id))

        from jobtrail.core.apply import Applied, apply

        async def once() -> Operation | None:
            op = await self.get(operation_id)
            verdict = cancellability(op)  # the core's rule, as every surface shows it
            if verdict.asked:
                return op  # asked before: a repeat changes nothing
            if not verdict.allowed:
                raise ActionRefused(f"{verdict.why}; nothing was recorded")
            now = self.now()
            intent = CancelIntent(
                actor=actor,
                reason=reason,
                expected_effect=expected_effect or "stop the remote job; work already done stays",
                requested_at=now,
                request_id=request_id or short_id("req_", self.rand),
            )
            entry = self._entry(op, now, "cancel.intent", actor, _intent_doc(intent))
            if op.state in (State.ACCEPTED, State.OBSERVING, State.RESULT_TIMED_OUT):
                applied = apply(
                    op,
                    o.CancelRequested(intent=intent),
                    now,
                    actor=actor,
                    schedule=self.schedule(op),
                )
            else:
                # No remote job id yet: keep the intent; it is acted on as soon as one is known.
                applied = Applied(
                    operation=evolve(op, cancel_intent=intent, next_poll_at=now, updated_at=now),
                    transitions=(),
                    observations=(),
                )
            result = await self._commit(self._change(op, applied, None, [entry]))
            return result.operation if result.verdict is Verdict.OK else None

        changing = ConcurrentUpdate(f"{operation_id} kept changing; try the cancel again")
        return await on_stale(once, changing)

    async def decide(
        self, operation_id: str, decision: o.HumanDecision, *, read: Attempt | None = None
    ) -> Operation:
        """Apply a recorded human decision (resolve a needs_human, extend a deadline).
        `read` is the finished status call behind `decision.read` (adopting a job id the
        operation never saw): it is recorded with the decision, in the same transaction."""
        await self.permit(decision_action(decision), decision.actor, await self.get(operation_id))
        from jobtrail.core.apply import apply

        async def once() -> Operation | None:
            op = await self.get(operation_id)
            if await self.was_requested(op, decision.request_id):
                return op  # this very decision was recorded before: nothing is done twice
            now = self.now()
            applied = apply(op, decision, now, actor=decision.actor, schedule=self.schedule(op))
            reads = []
            if read is not None:
                reads.append(
                    self._entry(op, now, "attempt.outcome", read.actor, outcome_entry(read))
                )
            entry = self._entry(
                op,
                now,
                "human.decision",
                decision.actor,
                {
                    "decision": decision.decision.value,
                    "reason": decision.reason,
                    "job_id": decision.job_id,
                    "request_id": decision.request_id,
                    "new_deadline": decision.new_deadline.isoformat()
                    if decision.new_deadline
                    else None,
                    "evidence": read.attempt_id if read else None,
                },
            )
            change = self._change(op, applied, None, [*reads, entry], started=read)
            result = await self._commit(change)
            return result.operation if result.verdict is Verdict.OK else None

        return await on_stale(once, ConcurrentUpdate(f"{operation_id} kept changing; try again"))

    async def record_read(self, operation_id: str, read: Attempt) -> None:
        """Record a status read that a refused decision made (adopting a job id that could not
        be read): every request sent is an attempt in the ledger, whatever was decided. The
        operation itself does not change."""

        detail = read.detail if isinstance(read.detail, dict) else {}
        read = evolve(read, detail={**detail, "refused_adoption": True})  # not the op's own

        async def once() -> Operation | None:
            op = await self.get(operation_id)
            entry = self._entry(op, self.now(), "attempt.outcome", read.actor, outcome_entry(read))
            change = Change(operation=op, before=op, attempt_started=read, audit=[entry])
            result = await self._commit(change)
            return result.operation if result.verdict is Verdict.OK else None

        await on_stale(once, ConcurrentUpdate(f"{operation_id} kept changing; try again"))

    async def was_requested(self, op: Operation, request_id: str) -> bool:
        """Whether the request `request_id` (a cancel or a human decision) was recorded for
        `op` already: its intent is the operation's, or a transition names it as cause."""
        if not request_id:
            return False
        if op.cancel_intent is not None and op.cancel_intent.request_id == request_id:
            return True
        causes = {f"human_decision:{request_id}", f"human_request:{request_id}"}
        return any(tr.cause in causes for tr in await self.store.history(op.operation_id))

    async def record_bulk(self, record: BulkRecord) -> None:
        """Record a bulk action once its items were tried (jobtrail.services.bulk): one audit entry
        for the whole action, one for each operation it skipped (the others have their verb's
        own entry: the cancel intent, the decision, the policy's refusal), then its record."""
        now, who = record.created_at, record.actor
        whole = {
            "bulk_id": record.bulk_id,
            "action": record.action.value,
            "reason": record.reason,
            "asked": record.asked,
            "counts": {outcome.value: record.count(outcome) for outcome in ItemOutcome},
            "items": [[i.operation_id, i.outcome.value] for i in record.items],
        }
        entries = [self._entry_for(None, now, "bulk.action", who, whole)]
        entries += [
            self._entry_for(
                item.operation_id,
                now,
                "bulk.skipped",
                who,
                {"bulk_id": record.bulk_id, "action": record.action.value, "why": item.why},
            )
            for item in record.items
            if item.outcome is ItemOutcome.SKIPPED
        ]
        await self.store.append_audit(redacted_entries(entries, Redactor()))
        await self.store.add_bulk(record)

    async def bulk(self, bulk_id: str) -> BulkRecord | None:
        """The bulk action recorded under `bulk_id`, or None."""
        return await self.store.bulk(bulk_id)

    async def resubmit(self, op: Operation, *, actor: str, reason: str) -> Operation:
        """The same request as a new operation (new token), after a human gave up on `op`.
        Its key derives from the old operation, so repeating the decision is harmless."""
        from jobtrail.providers.code.contract import stored_spec
        from jobtrail.providers.file.config import parse_provider

        code = op.provider_kind is ProviderKind.CODE
        spec = stored_spec(op) if code else parse_provider(op.provider_config)
        # without the deadline written for `op`: the new operation writes its own
        asked = unplaced(spec.remote_deadline, op.request.body, op.request.headers)
        return await self.submit(
            spec,
            asked.body,
            headers=asked.headers,
            key=f"{op.key}+retry-of-{op.operation_id}",
            actor=actor,
            authorized_by=actor,
            reason=f"retry of {op.operation_id}: {reason}",
        )


def decision_action(decision: o.HumanDecision) -> Action:
    """Which action of the policy a human decision is."""
    extends = (o.Decision.EXTEND, o.Decision.EXTEND_CANCEL)
    return Action.EXTEND if decision.decision in extends else Action.RESOLVE


def _intent_doc(intent: CancelIntent) -> dict[str, Any]:
    return {
        "actor": intent.actor,
        "reason": intent.reason,
        "expected_effect": intent.expected_effect,
        "request_id": intent.request_id,
    }
