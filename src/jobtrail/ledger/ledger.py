"""The ledger: the one place where the pure core meets the store.

Every change to an operation is decided by `core.apply` and written by `store.commit` with
its transitions, attempt, observations and audit entries in one transaction. Surfaces (CLI,
MCP, worker, webhooks) call these methods and hold no rules of their own.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from jobtrail.clock import SystemClock
from jobtrail.core import outcomes as o
from jobtrail.core.admission import check_request
from jobtrail.core.allows import cancellability
from jobtrail.core.audit import AuditEntry
from jobtrail.core.bulk import BulkRecord, ItemOutcome
from jobtrail.core.canonical import canonical_json, fingerprint
from jobtrail.core.ids import idempotency_token, operation_id, short_id, trace_id
from jobtrail.core.model import (
    Attempt,
    AttemptKind,
    CancelIntent,
    JobRequest,
    Observation,
    Operation,
    ProviderKind,
    Transition,
    evolve,
)
from jobtrail.core.plan import Call, Settle, plan
from jobtrail.core.proof import token_outlived
from jobtrail.core.redact import Redactor
from jobtrail.core.remote_deadline import place as place_deadline
from jobtrail.core.remote_deadline import unplaced
from jobtrail.core.retry import on_stale
from jobtrail.core.states import State
from jobtrail.core.tasks import TASK_PREFIX, TaskHandle, new_task_id, task_hash
from jobtrail.errors import (
    ActionRefused,
    ConcurrentUpdate,
    InvalidInput,
    KeyConflict,
    LostOwnership,
    NotFound,
    NotPermitted,
)
from jobtrail.ledger.histories import (
    COLLECTED,
    Forgery,
    audited_requests,
    audited_results,
    audited_steps,
    request_problem,
    result_problem,
)
from jobtrail.ledger.histories import check as check_history
from jobtrail.ledger.policy import Action, ActionPolicy, kind_of
from jobtrail.ledger.redaction import Redactors, redacted, redacted_entries, redacted_outcome
from jobtrail.randomness import PooledSystemRandom
from jobtrail.store.base import Change, Claim, CommitResult, Store, Verdict
from jobtrail.store.group import GroupCommitter
from jobtrail.store.retention import Bind, Keep, Pruned

if TYPE_CHECKING:  # imported where used: reading the ledger (`status`) needs no provider,
    # nor the core's apply (its planner, schedules and evidence rules)
    from jobtrail.core.apply import Applied, Policy
    from jobtrail.providers.code import CodeSpec
    from jobtrail.providers.config import ProviderSpec

Now = Callable[[], datetime]  # `now` of a jobtrail.clock.Clock
MAX_BODY_BYTES = 1024 * 1024  # a request body, as canonical JSON (docs/guarantees.md)
_EVERY = 2**62  # a list limit meaning "all"


class Ledger:
    def __init__(
        self,
        store: Store,
        *,
        clock: Now | None = None,
        rand: random.Random | None = None,
        group_commit: bool = False,
        actions: ActionPolicy | None = None,
    ) -> None:
        self.store = store
        self.actions = actions or ActionPolicy.default()
        self.clock: Now = clock or SystemClock().now
        self.rand = rand or PooledSystemRandom()
        self._group = GroupCommitter(store) if group_commit else None
        self._policies: dict[tuple[tuple[str, str], ...], Policy] = {}
        self._redactors = Redactors()

    def policy(self, op: Operation) -> Policy:
        """Scheduling for this operation, from the [poll] table of its provider file."""
        poll = op.provider_config.get("poll", {}) if isinstance(op.provider_config, dict) else {}
        shape = tuple(sorted((str(k), str(v)) for k, v in poll.items()))
        policy = self._policies.get(shape)
        if policy is None:
            from jobtrail.core.apply import Policy
            from jobtrail.providers.config import poll_rules

            rules = poll_rules(poll)
            policy = self._policies[shape] = Policy(
                rand=self.rand, poll=rules.backoff, bounds=rules.bounds, refusals=rules.refusals
            )
        return policy

    def redactor(self, op: Operation) -> Redactor:
        """What keeps `op`'s secrets out of what is stored: its provider's sensitive names and
        the secret values that provider uses now."""
        return self._redactors.for_operation(op)

    def scrub(self, change: Change) -> Change:
        """The redaction chokepoint (jobtrail.ledger.redaction): every change the ledger writes, and
        any other writer's (the webhook intake), passes here on its way to the store."""
        return redacted(change, self._redactors.for_operation(change.operation))

    async def _commit(self, change: Change) -> CommitResult:
        change = self.scrub(change)
        if self._group is not None:
            return await self._group.commit(change)
        (result,) = await self.store.commit([change])
        return result

    # -- asking --------------------------------------------------------------------------

    async def submit(
        self,
        provider: ProviderSpec | CodeSpec,
        body: Any = None,
        *,
        headers: dict[str, str] | None = None,
        path: Mapping[str, str] | None = None,
        key: str | None = None,
        actor: str,
        authorized_by: str | None = None,
        reason: str | None = None,
        create_deadline: timedelta | None = None,
        result_deadline: timedelta | None = None,
        cancel_deadline: timedelta | None = None,
    ) -> Operation:
        """Write the operation record durably; nothing is sent here. The same key with the
        same request returns the existing operation. `provider` is a provider file (the
        HTTP provider drives the operation) or a code provider's declaration (only a worker
        having that plug-in does)."""
        op, _ = await self.admit(
            provider,
            body,
            headers=headers,
            path=path,
            key=key,
            actor=actor,
            authorized_by=authorized_by,
            reason=reason,
            create_deadline=create_deadline,
            result_deadline=result_deadline,
            cancel_deadline=cancel_deadline,
        )
        return op

    async def admit(
        self,
        provider: ProviderSpec | CodeSpec,
        body: Any,
        *,
        headers: dict[str, str] | None = None,
        path: Mapping[str, str] | None = None,
        key: str | None = None,
        actor: str,
        authorized_by: str | None = None,
        reason: str | None = None,
        create_deadline: timedelta | None = None,
        result_deadline: timedelta | None = None,
        cancel_deadline: timedelta | None = None,
    ) -> tuple[Operation, bool]:
        """`submit`, also saying whether the operation already existed under its key (True:
        nothing new was recorded). `path` fills the create path's placeholders."""
        await self.permit(Action.SUBMIT, actor, None, subject=key)
        request, print_, body_size = prepare_submission(
            provider,
            body,
            headers=headers,
            path=path,
            key=key,
            redactors=self._redactors,
            create_deadline=create_deadline,
            result_deadline=result_deadline,
        )
        now = self.clock()
        op_id = operation_id(now, self.rand)
        deadlines = provider.deadlines
        op = Operation(
            operation_id=op_id,
            key=key or op_id,
            provider=provider.name,
            provider_config=provider.document,
            provider_kind=provider.kind,
            provider_version=provider.version,
            capabilities=provider.capabilities,
            request=request,
            fingerprint=print_,
            idempotency_token=idempotency_token(self.rand),
            trace_id=trace_id(self.rand),
            actor=actor,
            authorized_by=authorized_by,
            reason=reason,
            created_at=now,
            create_deadline=now + (create_deadline or deadlines["create"]),
            result_deadline=now + (result_deadline or deadlines["result"]),
            cancel_timeout=cancel_deadline or deadlines["cancel"],
            next_poll_at=now,
            updated_at=now,
        )
        entry = AuditEntry(
            at=now,
            operation_id=op_id,
            kind="operation.submitted",
            actor=actor,
            data={
                "key": op.key,
                "provider": op.provider,
                "provider_kind": op.provider_kind.value,
                "provider_version": op.provider_version,
                "target": request.target,
                "fingerprint": print_,
                "idempotency_token": op.idempotency_token,
                "trace_id": op.trace_id,
                "authorized_by": authorized_by,
                "reason": reason,
                # The request body is stored once, in the operation row; the chain holds
                # its fingerprint and size, which bind that row (docs/guarantees.md).
                "body_bytes": body_size,
            },
        )
        stored = await self.store.create_operation(
            op, redacted_entries([entry], self._redactors.for_operation(op))
        )
        if stored.operation_id == op_id:
            return stored, False
        from jobtrail.providers.config import ProviderSpec

        if isinstance(provider, ProviderSpec) and _recorded_before_base_url(
            stored, provider, request
        ):
            return stored, True
        return _same_request(stored, print_, op.key), True

    # -- reading -------------------------------------------------------------------------

    async def get(self, operation_id: str) -> Operation:
        op = await self.store.get(operation_id)
        if op is None:
            raise NotFound(f"no operation {operation_id!r} in this ledger")
        return op

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
        for op in reversed(await self.store.list_operations(limit=_EVERY)):
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

    async def prune(
        self, older_than: timedelta, *, actor: str, keep: Keep, bind: Bind | None = None
    ) -> Pruned:
        """Move the operations that finished more than `older_than` ago out of the ledger,
        with everything they own, leaving a checkpoint in the audit chain (see
        store/retention.py). `keep` archives them; nothing is removed if it fails."""
        if older_than <= timedelta(0):
            raise InvalidInput("prune needs a positive age, like 30d: only the past is pruned")
        await self.permit(Action.PRUNE, actor, None)
        now = self.clock()
        return await self.store.prune(now - older_than, now, actor, keep, bind)

    # -- task handles (MCP Tasks: core/tasks.py) -----------------------------------------

    async def open_task(
        self, op: Operation, *, owner: str, tool: str, existing: bool, ttl: timedelta | None
    ) -> tuple[str, TaskHandle]:
        """Record a durable handle on `op` bound to `owner`, committed before this returns.
        The task id is returned here once: the ledger keeps only its hash."""
        task_id, now = new_task_id(self.rand), self.clock()
        handle = TaskHandle(
            task_hash=task_hash(task_id),
            operation_id=op.operation_id,
            owner=owner,
            tool=tool,
            existing=existing,
            created_at=now,
            expires_at=None if ttl is None else now + ttl,
        )
        await self.store.add_task(handle)
        return task_id, handle

    async def task(self, task_id: str, *, owner: str) -> TaskHandle | None:
        """The handle `task_id` names, expired or not, if it is bound to `owner`; anyone
        else learns nothing, not even that it exists."""
        if not task_id.startswith(TASK_PREFIX) or len(task_id) > 200:
            return None
        handle = await self.store.task(task_hash(task_id))
        return handle if handle is not None and handle.owner == owner else None

    # -- human and agent requests ------------------------------------------------------

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
            now = self.clock()
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
                    op, o.CancelRequested(intent=intent), now, actor=actor, policy=self.policy(op)
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
            now = self.clock()
            applied = apply(op, decision, now, actor=decision.actor, policy=self.policy(op))
            reads = []
            if read is not None:
                reads.append(
                    self._entry(op, now, "attempt.outcome", read.actor, _outcome_entry(read))
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
        from jobtrail.providers.code import stored_spec
        from jobtrail.providers.config import parse_provider

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

    # -- leases: the worker's and `run`'s only way to take and give back work ------------

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
        return await self.store.claim_due(owner, self.clock(), limit, lease_for, only, code)

    async def release(self, op: Operation, due: datetime | None) -> Operation:
        """Give `op`'s lease back, next due at `due` (None: nothing left to do). Whether
        another owner took it over meanwhile does not matter: either way this owner stops."""
        await self.store.release(op.operation_id, op.fence, self.clock(), due)
        return evolve(op, lease_owner=None, lease_expires_at=None)

    async def renew(self, op: Operation, lease_for: timedelta) -> Operation:
        """Extend the lease held on `op`; LostOwnership if it was taken over."""
        now = self.clock()
        if not await self.store.renew(op.operation_id, op.fence, now, lease_for):
            raise LostOwnership(f"lease on {op.operation_id} was taken over (fence {op.fence})")
        return evolve(op, lease_expires_at=now + lease_for)

    async def record_stop(self, actor: str, data: dict[str, Any]) -> None:
        """Audit that a person stopped `actor` (a worker or server), so the stop reads as
        deliberate rather than as a crash."""
        entry = self._entry_for(None, self.clock(), "worker.stopped", actor, data)
        await self.store.append_audit(redacted_entries([entry], Redactor()))

    async def next_due(self, code: Collection[str] | None = None) -> datetime | None:
        """When the next operation becomes due (poll time, or a lease's expiry), among those
        a claimer having the code providers `code` would claim."""
        return await self.store.next_due(code)

    # -- webhooks -------------------------------------------------------------------------

    async def find_by_remote_job(self, provider: str, remote_job_id: str) -> Operation | None:
        return await self.store.find_by_remote_job(provider, remote_job_id)

    async def record_webhook(
        self,
        op: Operation,
        observation: Observation,
        entry: AuditEntry,
        *,
        read_at: datetime | None,
        request_poll: bool,
    ) -> Verdict:
        """Record a verified webhook event as an observation of `op` (never a transition),
        scheduling a status read at `read_at` (None: keep the poll time) and, if
        `request_poll`, asking a worker holding `op` for one when it gives the lease back.
        A non-owner write: it never moves the poll time of a leased operation."""
        due = op.next_poll_at if read_at is None else read_at
        change = Change(
            operation=evolve(op, next_poll_at=due, updated_at=observation.observed_at),
            before=op,
            observations=[observation],
            audit=[entry],
            request_poll=request_poll,
        )
        return (await self._commit(change)).verdict

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
        entry = self._entry_for(op_id, self.clock(), "policy.refused", actor, data)
        redactor = self._redactors.for_operation(op) if op else Redactor()
        await self.store.append_audit(redacted_entries([entry], redactor))
        raise NotPermitted(self.actions.refusal(action, actor, op_id, owner))

    # -- the worker's side ---------------------------------------------------------------

    async def begin_call(
        self, op: Operation, kind: AttemptKind, request: dict[str, Any], actor: str
    ) -> tuple[Operation, Attempt]:
        """Record the intent of a call with an effect durably, before it is made. A safe read
        (status, result GET) needs none: its attempt is returned unrecorded, and
        `finish_call` records it with its outcome, in one commit."""
        now = self.clock()
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
        finished, outcome = self.finished(op, attempt, outcome, detail)
        now, detail = finished.finished_at or self.clock(), finished.detail
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

    def finished(
        self, op: Operation, attempt: Attempt, outcome: o.CallOutcome, detail: dict[str, Any]
    ) -> tuple[Attempt, o.CallOutcome]:
        """`attempt` finished with `outcome` as the core judges it (what the answer proves,
        core/evidence.py), its outcome stored as the outcome's word; not yet recorded (the
        worker's `finish_call` records it, adoption with its decision)."""
        from jobtrail.core.apply import judged

        outcome = evolve(outcome, ref=attempt.attempt_id)  # every cause names its attempt
        judged_ = judged(outcome, op)  # the core's word on what the answer proves
        if judged_ is not outcome:
            if isinstance(judged_, o.Ambiguous) and "error" not in detail:
                detail = {**detail, "error": judged_.reason}
            outcome = judged_  # type: ignore[assignment]
        finished = evolve(
            attempt,
            finished_at=self.clock(),
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
        return await self._apply_outcome(op, outcome, self.clock(), actor, None, None, release)

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
        outcome = redacted_outcome(outcome, self._redactors.for_operation(op))
        from jobtrail.core.apply import apply

        async def once() -> Operation | None:
            nonlocal op
            applied = apply(op, outcome, now, actor=actor, policy=self.policy(op))
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


def prepare_submission(
    provider: ProviderSpec | CodeSpec,
    body: Any,
    *,
    headers: Mapping[str, str] | None = None,
    path: Mapping[str, str] | None = None,
    key: str | None = None,
    redactors: Redactors | None = None,
    create_deadline: timedelta | None = None,
    result_deadline: timedelta | None = None,
) -> tuple[JobRequest, str, int]:
    """The request a submit would record, its fingerprint and its body's size, or the
    InvalidInput that refuses it: everything a submit checks before it writes, so that a
    surface can refuse a bad submit before it opens (or creates) a ledger."""
    from jobtrail.providers.baseurl import unfilled
    from jobtrail.providers.config import ProviderSpec
    from jobtrail.providers.pathvalues import checked

    if isinstance(provider, ProviderSpec):
        placeholder = unfilled(provider)  # ARM's .../subscriptions/SUBSCRIPTION/...
        if placeholder is not None:
            raise InvalidInput(placeholder)
    headers = dict(headers or {})
    in_use = provider.secret_values()  # read from the environment once per submit
    check_request(
        headers,
        body,
        (redactors or Redactors()).extended(provider.redactor, in_use),
        own=_own_headers(provider),
    )
    values = checked(provider.create_placeholders, path)
    if any(s in value for s in in_use if s for value in values.values()):
        raise InvalidInput("a path value holds a secret in use; credentials go in `auth`")
    outlived = token_outlived(
        provider.capabilities, create_deadline or provider.deadlines["create"]
    )
    if outlived is not None:
        raise InvalidInput(outlived)
    # The provider's own deadline, from the result deadline: part of what is fingerprinted
    placed = place_deadline(
        provider.remote_deadline, body, headers, result_deadline or provider.deadlines["result"]
    )
    body, headers = placed.body, placed.headers
    request = JobRequest(
        method=provider.create_method,
        target=provider.target_with(values) if values else provider.target,
        body=body,
        headers=headers,
        path=values,
        remote_deadline=placed.seconds,
    )
    # The fingerprint is computed first: it refuses what is not JSON before any write.
    print_ = fingerprint(request.method, request.target, body, headers, values)
    body_size = len(canonical_json(body).encode("utf-8"))
    if body_size > MAX_BODY_BYTES:
        raise InvalidInput(
            f"the request body is {body_size} bytes; jobtrail records bodies up to "
            f"{MAX_BODY_BYTES} bytes (1 MiB): send a reference to the data instead"
        )
    if key is not None:
        _check_key(key)  # an existing key is found by create_operation, atomically
    return request, print_, body_size


def decision_action(decision: o.HumanDecision) -> Action:
    """Which action of the policy a human decision is."""
    extends = (o.Decision.EXTEND, o.Decision.EXTEND_CANCEL)
    return Action.EXTEND if decision.decision in extends else Action.RESOLVE


def _own_headers(provider: ProviderSpec | CodeSpec) -> list[str]:
    from jobtrail.providers.code import CodeSpec

    if isinstance(provider, CodeSpec):
        return ["traceparent"]
    placed = (provider.idempotency, provider.client_reference)
    names = [p.header for p in placed if p is not None and p.header]
    # the client request id header ([request_ids] send) may be given: it is then sent on
    # every call of the operation instead of a fresh UUID (providers/http.py)
    names += [h for h in (provider.trace_header,) if h]
    return [*names, "traceparent"]


def _outcome_entry(attempt: Attempt) -> dict[str, Any]:
    """What the audit log keeps of a finished call, as `finish_call` writes it."""
    return {
        "attempt_id": attempt.attempt_id,
        "kind": attempt.kind.value,
        "outcome": attempt.outcome,
        "http_status": attempt.http_status,
        "provider_request_id": attempt.provider_request_id,
        "detail": attempt.detail,
    }


def _check_key(key: str) -> None:
    if not key or len(key) > 200 or not key.isprintable():
        raise InvalidInput("an operation key must be 1 to 200 printable characters")


def _recorded_before_base_url(
    existing: Operation, provider: ProviderSpec, request: JobRequest
) -> bool:
    """The same request, recorded before targets named the base URL (`NAME:METHOD PATH`):
    same provider, base URL, method, path, body and headers. Any difference is still
    another request."""
    old_target = f"{provider.name}:{provider.create_method} {provider.create_path}"
    config = existing.provider_config if isinstance(existing.provider_config, dict) else {}
    if request.path or existing.request.target != old_target:
        return False
    if str(config.get("base_url", "")).rstrip("/") != provider.base_url:
        return False
    again = fingerprint(request.method, old_target, request.body, request.headers or None)
    return again == existing.fingerprint


def _same_request(existing: Operation, print_: str, key: str) -> Operation:
    if existing.fingerprint != print_:
        raise KeyConflict(
            f"key {key!r} already names operation {existing.operation_id} with a different "
            f"request ({existing.fingerprint[:19]}…, now {print_[:19]}…); a changed request is "
            "a new operation: use a new key, and cancel the old operation if it should not run"
        )
    return existing


def _intent_doc(intent: CancelIntent) -> dict[str, Any]:
    return {
        "actor": intent.actor,
        "reason": intent.reason,
        "expected_effect": intent.expected_effect,
        "request_id": intent.request_id,
    }
