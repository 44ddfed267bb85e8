"""Driving operations: leases (claim, renew, release), a call's intent before it is sent and
its outcome after, local outcomes, and webhook observations (a non-owner write)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from jobtrail.core import outcomes as o
from jobtrail.core.caps import capped_document, capped_outcome, capped_text
from jobtrail.core.draft import seen_again
from jobtrail.core.events import Event, StatusRead, asks_owner, event_audit, read_at, status_read
from jobtrail.core.ids import short_id
from jobtrail.core.model import (
    Attempt,
    AttemptKind,
    Observation,
    Operation,
    evolve,
)
from jobtrail.core.plan import Call, Settle, Wait, plan
from jobtrail.core.redact import Redactor
from jobtrail.core.retry import on_stale
from jobtrail.core.usage import checked_usage
from jobtrail.errors import ConcurrentUpdate, LostOwnership, NotFound
from jobtrail.ledger.common import LedgerBase
from jobtrail.ledger.redaction import redacted_entries, redacted_outcome
from jobtrail.store.changes import Change, Claim, Verdict
from jobtrail.store.seen import SeenAgain


@dataclass(frozen=True)
class Observed:
    """A webhook event recorded (`observe_event`): the operation as it was, what the event
    did to its next status read, and whether the event had been recorded before."""

    operation: Operation
    read: StatusRead
    duplicate: bool


class Driving(LedgerBase):
    async def claim(
        self,
        owner: str,
        limit: int,
        lease_for: timedelta,
        *,
        only: str | None = None,
        code: Collection[str] | None = None,
    ) -> list[Claim]:
        """Lease up to `limit` due operations (or only `only`, if due) for `owner`, who has
        the code providers `code` (None: no filter): an operation of another code provider
        is left unclaimed, never driven by another provider."""
        return await self.store.claim_due(owner, self.now(), limit, lease_for, only, code)

    async def release(self, op: Operation, due: datetime | None) -> Operation:
        """Give `op`'s lease back, next due at `due` (None: nothing left to do). Whether
        another owner took it over meanwhile does not matter: either way this owner stops."""
        await self.store.release(op.operation_id, op.fence, self.now(), due)
        return evolve(op, lease_owner=None, lease_expires_at=None)

    async def renew(self, op: Operation, lease_for: timedelta) -> Operation:
        """Extend the lease held on `op`; LostOwnership if it was taken over."""
        now = self.now()
        if not await self.store.renew(op.operation_id, op.fence, now, lease_for):
            raise LostOwnership(f"lease on {op.operation_id} was taken over (fence {op.fence})")
        return evolve(op, lease_expires_at=now + lease_for)

    async def record_stop(self, actor: str, data: dict[str, Any]) -> None:
        """Audit that a person stopped `actor` (a worker or server), so the stop reads as
        deliberate rather than as a crash."""
        entry = self._entry_for(None, self.now(), "worker.stopped", actor, data)
        await self.store.append_audit(redacted_entries([entry], Redactor()))

    async def next_due(self, code: Collection[str] | None = None) -> datetime | None:
        """When the next operation becomes due (poll time, or a lease's expiry), among those
        a claimer having the code providers `code` would claim."""
        return await self.store.next_due(code)

    async def begin_call(
        self,
        op: Operation,
        kind: AttemptKind,
        request: dict[str, Any],
        actor: str,
        *,
        started_at: datetime | None = None,
    ) -> tuple[Operation, Attempt]:
        """Record the intent of a call with an effect durably, before it is made. A safe read
        (status, result GET) needs none: its attempt is returned unrecorded, and
        `finish_call` records it with its outcome, in one commit; one made after its call
        (worker/seen.py) says when the call started (`started_at`)."""
        now = self.now() if started_at is None or not kind.safe else started_at
        attempt = Attempt(
            attempt_id=short_id("at_", self.rand),
            operation_id=op.operation_id,
            kind=kind,
            fence=op.fence,
            actor=actor,
            started_at=now,
            request=request,
        )
        if kind.safe:
            return op, attempt
        marked = evolve(op, inflight_attempt=attempt.attempt_id, updated_at=now)
        entry = self._entry(
            op,
            now,
            "attempt.intent",
            actor,
            {"attempt_id": attempt.attempt_id, "kind": kind.value, "request": request},
        )
        change = Change(
            operation=marked,
            owner_fence=op.fence,
            before=op,
            attempt_started=attempt,
            audit=[entry],
        )
        result = await self._commit(change)
        if result.verdict is Verdict.OK and result.operation is not None:
            return result.operation, attempt
        if result.verdict is Verdict.STALE and result.operation is not None:
            raise ConcurrentUpdate("the operation changed before the call; plan again")
        raise LostOwnership(f"lease on {op.operation_id} was taken over (fence {op.fence})")

    async def finish_call(
        self,
        op: Operation,
        attempt: Attempt,
        outcome: o.CallOutcome,
        *,
        detail: dict[str, Any],
        actor: str,
        release: bool = False,
    ) -> Operation:
        """Record a call's outcome and what it changes. Re-applied if someone else (a cancel
        request, a webhook) changed the record meanwhile; refused if the lease moved on.

        A safe read is recorded here for the first time, and its outcome is not audited: what
        it saw is in its observation run (sealed in the audit log when the run closes) and
        what it changed in the transitions."""
        from jobtrail.core.apply import misdirected

        if misdirected(outcome, op, attempt.kind):  # an answer to another call: no evidence
            word = type(outcome).__name__
            reason = (
                f"the provider answered the {attempt.kind} call with {word}, which cannot "
                f"answer it in {op.state}; its outcome is unknown"
            )
            outcome, detail = o.Ambiguous(reason=reason), {**detail, "error": reason}
        finished, outcome = self.finished(op, attempt, outcome, detail)
        now, detail = finished.finished_at or self.now(), finished.detail
        if attempt.kind.safe:
            return await self._apply_outcome(
                op, outcome, now, actor, finished, None, release, safe=True
            )
        entry_data = {
            "attempt_id": attempt.attempt_id,
            "kind": attempt.kind.value,
            "outcome": finished.outcome,
            "http_status": finished.http_status,
            "provider_request_id": finished.provider_request_id,
            "detail": detail,
        }
        return await self._apply_outcome(op, outcome, now, actor, finished, entry_data, release)

    async def seen_again(
        self, op: Operation, retry_after: str | None, request_id: str | None
    ) -> Operation | None:
        """Record a status read of `op` (leased by us, unchanged since our last write) whose
        answer equals the last one read, which the core judged an unchanged running read: the
        open run seen once more, the next poll scheduled as that judgment schedules it
        (`retry_after` as the answer said, else backoff with jitter; bounded by the deadline),
        the lease given back. None, and nothing written, when it cannot be recorded so (a
        deadline reached meanwhile, the record or its run moved on): the caller then has the
        answer judged in full (worker/seen.py)."""
        now = self.now()
        # as a judged answer's texts are applied and stored: capped, then redacted
        redactor = self._redactors.for_operation(op)
        if retry_after is not None:
            retry_after = redactor.text(capped_text(retry_after))
        if request_id is not None:
            request_id = redactor.text(capped_text(request_id))
        after = seen_again(op, now, retry_after, self.schedule(op))
        if not isinstance(plan(after, now), Wait):
            return None  # judged in full, the read would not just wait: a deadline
        read = SeenAgain(
            operation_id=op.operation_id,
            fence=op.fence,
            version=op.version,
            at=now,
            next_poll_at=after.next_poll_at,
            poll_count=after.poll_count,
            request_id=request_id,
        )
        stored = await self.store.seen_again(read)
        if stored is None:
            return None
        return evolve(
            after,
            version=stored.version,
            next_poll_at=stored.next_poll_at,
            lease_owner=None,
            lease_expires_at=None,
        )

    def finished(
        self, op: Operation, attempt: Attempt, outcome: o.CallOutcome, detail: dict[str, Any]
    ) -> tuple[Attempt, o.CallOutcome]:
        """`attempt` finished with `outcome` as the core judges it (what the answer proves,
        core/evidence.py), its outcome stored as the outcome's word; not yet recorded (the
        worker's `finish_call` records it, adoption with its decision)."""
        from jobtrail.core.apply import judged

        outcome = evolve(outcome, ref=attempt.attempt_id)  # every cause names its attempt
        detail = capped_document(detail)  # what a provider says is stored capped (core/caps)
        if isinstance(outcome, o.Observed) and outcome.usage is not None:
            usage, dropped = checked_usage(outcome.usage)  # only counts: none below zero
            if dropped:
                outcome = evolve(outcome, usage=usage)
                detail = {**detail, "usage_dropped": dropped}
        if isinstance(outcome, o.Found):  # what a lookup found, as the timeline tells it
            detail = {**detail, "found": list(outcome.job_ids)}
            # a miss is judged when the listing was asked for, not when its answer came
            outcome = evolve(outcome, asked_at=attempt.started_at)
        judged_ = judged(outcome, op)  # the core's word on what the answer proves
        if judged_ is not outcome:
            if isinstance(judged_, o.Ambiguous) and "error" not in detail:
                detail = {**detail, "error": judged_.reason}
            outcome = judged_  # type: ignore[assignment]
        finished = evolve(
            attempt,
            finished_at=self.now(),
            outcome=outcome.word,
            http_status=getattr(outcome, "http_status", None),
            provider_request_id=getattr(outcome, "request_id", None),
            detail=detail,
        )
        return finished, outcome

    async def settle(
        self, op: Operation, outcome: o.LocalOutcome, actor: str, release: bool = False
    ) -> Operation:
        """Apply a local outcome (deadline, interrupted attempt...) under the lease."""
        return await self._apply_outcome(op, outcome, self.now(), actor, None, None, release)

    async def _apply_outcome(
        self,
        op: Operation,
        outcome: o.Outcome,
        now: datetime,
        actor: str,
        finished: Attempt | None,
        entry_data: dict[str, Any] | None,
        release: bool,
        *,
        safe: bool = False,
    ) -> Operation:
        fence = op.fence
        # Redacted before it is applied, so the core compares stored words with clean ones.
        outcome = redacted_outcome(capped_outcome(outcome), self._redactors.for_operation(op))
        from jobtrail.core.apply import apply

        async def once() -> Operation | None:
            nonlocal op
            applied = apply(op, outcome, now, actor=actor, schedule=self.schedule(op))
            audit = []
            if entry_data is not None:
                audit.append(self._entry(op, now, "attempt.outcome", actor, entry_data))
            elif isinstance(outcome, o.LocalOutcome):
                audit.append(
                    self._entry(op, now, "local.outcome", actor, {"outcome": outcome.word})
                )
            keep = not release and isinstance(plan(applied.operation, now), Call | Settle)
            change = self._change(op, applied, fence, audit, finished=finished, release=not keep)
            if safe:
                change = replace(change, attempt_finished=None, safe_read=finished)
            result = await self._commit(change)
            if result.verdict is Verdict.OK and result.operation is not None:
                return result.operation
            if result.verdict is Verdict.FENCED_OUT or result.operation is None:
                raise LostOwnership(f"lease on {op.operation_id} was taken over (fence {fence})")
            op = result.operation  # changed by someone else: apply the same outcome again
            return None

        changing = ConcurrentUpdate(f"{op.operation_id} kept changing under the worker")
        return await on_stale(once, changing)

    async def find_by_remote_job(self, provider: str, remote_job_id: str) -> Operation | None:
        return await self.store.find_by_remote_job(provider, remote_job_id)

    async def observe_event(self, provider: str, event: Event) -> Observed:
        """Record a verified webhook `event` as an observation of the operation of `provider`
        holding its job (never a transition), deduplicated by its event id; the core decides
        what it does to the next status read (core/events.py), asking a worker holding the
        operation for one more read when it gives the lease back. A non-owner write: it
        never moves a leased operation's poll time. NotFound when no operation holds the
        job; ConcurrentUpdate when the operation kept changing (the sender delivers again)."""

        async def once() -> Observed | None:
            op = await self.store.find_by_remote_job(provider, event.job_id)
            if op is None:
                raise NotFound(
                    f"no operation of provider {provider!r} holds remote job {event.job_id!r}"
                )
            now = self.now()
            read = status_read(op, now)
            due = read_at(read, now)
            observation = Observation(
                operation_id=op.operation_id,
                source="webhook",
                observed_at=now,
                remote_state=event.remote_state,
                remote_status=event.remote_status,
                provider_updated_at=event.provider_updated_at,
                ref=event.event_id,
                event_id=f"{provider}:{event.event_id}",  # ids are unique per provider
            )
            entry = self._entry(
                op,
                now,
                "webhook.received",
                f"webhook:{provider}",
                event_audit(provider, event, read),
            )
            change = Change(
                operation=evolve(
                    op, next_poll_at=op.next_poll_at if due is None else due, updated_at=now
                ),
                before=op,
                observations=[observation],
                audit=[entry],
                request_poll=asks_owner(read),
            )
            verdict = (await self._commit(change)).verdict
            if verdict is Verdict.DUPLICATE_EVENT:
                return Observed(op, read, duplicate=True)
            return Observed(op, read, duplicate=False) if verdict is Verdict.OK else None

        changing = ConcurrentUpdate(
            f"the operation holding remote job {event.job_id!r} kept changing; deliver again"
        )
        return await on_stale(once, changing)
