"""Driving one leased operation: plan, record the intent (for a call with an effect), call,
record the outcome, repeat while there is something to do now; the last write gives the lease
back. A safe read (status, result GET) is recorded once, after the call, in one commit."""

from __future__ import annotations

import hashlib
import logging
from datetime import datetime, timedelta
from typing import Any

from jobtrail.core import outcomes as o
from jobtrail.core.lateness import Tally
from jobtrail.core.leases import EFFECT_MARGIN, effect_lease, lease_left, may_send
from jobtrail.core.lookup import find
from jobtrail.core.model import Attempt, AttemptKind, Operation, ResultMode, ResultSummary, evolve
from jobtrail.core.plan import Call, Nothing, Settle, Wait, plan
from jobtrail.core.redact import REDACTED
from jobtrail.core.validate import Candidate, Rules, validate
from jobtrail.errors import ConcurrentUpdate, LostOwnership, ResultError
from jobtrail.ledger import Ledger
from jobtrail.providers.file.spec import ResultSpec
from jobtrail.providers.guarded import guarded_call, in_full
from jobtrail.providers.protocol import Provider, Reply
from jobtrail.providers.registry import ProviderRegistry
from jobtrail.results import UNSTORED, ResultStore
from jobtrail.worker.seen import Seen, SeenAnswers

log = logging.getLogger("jobtrail.worker")
RENEW_MARGIN = EFFECT_MARGIN  # seconds kept for recording the outcome after a call's own timeout


class Runner:
    def __init__(
        self,
        ledger: Ledger,
        providers: ProviderRegistry,
        blobs: ResultStore,
        *,
        actor: str,
        lease_for: timedelta,
    ) -> None:
        self.ledger, self.providers, self.blobs = ledger, providers, blobs
        self.actor, self.lease_for = actor, lease_for
        self._unsent: set[tuple[str, str]] = set()  # (provider, why) said once each
        self.lateness = Tally()  # status reads' lateness, until services/lateness.py flushes
        self.seen = SeenAnswers()  # the last status answers read (worker/seen.py)

    async def drive(self, op: Operation) -> Operation | None:
        """Run `op` (leased by us) until it waits, ends or needs a human. Returns the last
        record, or None if ownership was lost on the way."""
        try:
            while op.lease_owner is not None:
                op = await self._turn(op)
            log.info("released (state %s)", op.state.value, extra=_fields(op))
            return op
        except LostOwnership as exc:
            log.warning("lost ownership: %s", exc, extra=_fields(op))
            return None

    async def _turn(self, op: Operation) -> Operation:
        now = self.ledger.now()
        action = plan(op, now)
        if isinstance(action, Nothing | Wait):
            return await self.ledger.release(op, action.until if isinstance(action, Wait) else None)
        if isinstance(action, Settle):
            log.info("settling: %s", action.outcome.word, extra=_fields(op))
            return await self.ledger.settle(op, action.outcome, self.actor)
        return await self._call(op, action, now)

    async def _call(self, op: Operation, action: Call, now: datetime) -> Operation:
        """`action`, planned at `now` on the ledger's clock with nothing awaited since."""
        asked, lease = 0.0, None  # a safe read's lease is not checked again
        if action.kind.safe:
            renewed = await self._renew_if_short(op, now)
            # Unrenewed, nothing was awaited: `now` is still the time (one reading of the
            # clock fewer per poll). A renewal waited on the ledger: the time is read anew.
            started = now if renewed is op else None
            op = renewed
        else:
            # Measured on the machine's boot clock (Ledger.stopwatch), which runs at the
            # ledger clock's rate and which no step or faker of this process's clock moves.
            asked, started = self.ledger.stopwatch(), None
            lease = self._effect_lease(op)
            # A call with an effect gets a whole lease, counted on the ledger's clock from
            # now: however this worker's clock is off, or stepped since the claim, the lease
            # outlasts the call (its timeout is shorter), so no one can take the operation
            # over and send it again while this call may still land. The renewal's answer
            # may itself come late (a cut link healed): what is left of the lease is
            # checked again just before sending (core/leases.may_send).
            op = await self.ledger.renew(op, lease)
        provider = self.providers.for_operation(op)
        if (seen := self.seen.previous(op, action.kind)) is not None:
            return await self._read_again(op, action, provider, seen, started)
        request = provider.describe(action.kind, op)
        local = action.kind is AttemptKind.RESULT and _collects_locally(op)
        if local:
            request = {"collect": "inline result" if op.inline_result else "no result declared"}
        try:
            # A safe read commits nothing here: its outcome is recorded after the call.
            op, attempt = await self.ledger.begin_call(op, action.kind, request, self.actor)
        except ConcurrentUpdate:
            return await self.ledger.get(op.operation_id)
        forged = None
        if action.kind is AttemptKind.CREATE:
            forged = await self.ledger.submission_problem(op)
        if lease is not None:  # last, just before sending: every answer above counts
            self._check_lease_outlasts(op, self.ledger.stopwatch() - asked, lease)
        if forged is not None:
            reply = _not_sent(op, forged)
        elif local:
            reply = await self._collect_locally(op)
        else:
            reply = await self._send(op, action, provider)
        return await self._record(op, action, attempt, reply)

    async def _record(
        self, op: Operation, action: Call, attempt: Attempt, reply: Reply
    ) -> Operation:
        """The call's outcome recorded, judged by the core: the record after it."""
        outcome = await self._outcome(op, reply)
        detail = reply.detail
        if isinstance(detail, dict) and detail.get("sent") is False:
            self._say_unsent(op, str(detail.get("error", "")))
        if isinstance(outcome, o.ResultMissing) and reply.fetched is not None:
            detail = {**detail, "error": outcome.reason}  # fetched, but could not be stored
        after = await self.ledger.finish_call(op, attempt, outcome, detail=detail, actor=self.actor)
        self.seen.judged(op, action.kind, reply, after)
        log.info(
            "%s: %s",
            action.describe(),
            outcome.word,
            extra=_fields(after) | {"attempt_id": attempt.attempt_id},
        )
        return after

    async def _send(
        self,
        op: Operation,
        action: Call,
        provider: Provider,
        previous: bytes | None = None,
        now: datetime | None = None,
    ) -> Reply:
        """The provider's answer (for a status read whose last answer's identity is
        `previous`, maybe a repeated one); its lateness counted at `now` (None: now)."""
        log.info("calling: %s", action.describe(), extra=_fields(op))
        self.lateness.read(op, action.kind, now or self.ledger.now())
        return await guarded_call(
            provider,
            self.ledger.redactor(op),
            action.kind,
            op,
            limit=self.providers.call_limit(op),
            previous=previous,
        )

    async def _read_again(
        self, op: Operation, action: Call, provider: Provider, seen: Seen, now: datetime | None
    ) -> Operation:
        """A status read of an operation whose last answer is remembered (worker/seen.py).
        An answer equal to it is recorded as seen again, with no attempt of its own; any
        other, or one that cannot be recorded so, is judged in full and recorded as every
        answer is, its attempt started when the call was: `now`, if given (None: now)."""
        started = self.ledger.now() if now is None else now
        reply = await self._send(op, action, provider, seen.answer, started)
        if reply.repeated is not None:
            again = await self.ledger.seen_again(op, seen.retry_after, reply.repeated.request_id)
            if again is not None:
                self.seen.again(seen, again)
                log.info("%s: seen again", action.describe(), extra=_fields(again))
                return again
            reply = in_full(reply, self.ledger.redactor(op), action.kind, op)
        request = provider.describe(action.kind, op)
        op, attempt = await self.ledger.begin_call(
            op, action.kind, request, self.actor, started_at=started
        )
        return await self._record(op, action, attempt, reply)

    def _say_unsent(self, op: Operation, why: str) -> None:
        """A call stopped before sending (an unset credential, a refused connection) is
        logged loudly once per provider and reason: it repeats until someone acts."""
        if (op.provider, why) in self._unsent:
            return
        self._unsent.add((op.provider, why))
        log.warning("nothing sent to provider %r: %s", op.provider, why, extra=_fields(op))

    def _effect_lease(self, op: Operation) -> timedelta:
        """The lease a call with an effect is made under: the worker's, or longer where the
        provider's call timeout would not leave as much again for the renewal's answer."""
        timeout = self.providers.timeout(op).total_seconds()
        return timedelta(seconds=effect_lease(self.lease_for.total_seconds(), timeout))

    def _check_lease_outlasts(self, op: Operation, waited: float, lease: timedelta) -> None:
        """LostOwnership, before anything is sent, when the renewal and the intent were
        acknowledged too late for the call to land inside `lease` (core/leases.may_send)."""
        timeout = self.providers.timeout(op).total_seconds()
        if may_send(waited, timeout, lease.total_seconds(), RENEW_MARGIN):
            return
        raise LostOwnership(
            f"not sent: the lease on {op.operation_id} was renewed {waited:.1f} s ago (the "
            "ledger answered late), too long for the call to land inside it; whoever drives "
            "it next reconciles"
        )

    async def _renew_if_short(self, op: Operation, now: datetime) -> Operation:
        """A call must finish inside the lease: renew first if less than its timeout is left
        at `now` (the ledger's time: the caller read it with nothing awaited since)."""
        left = lease_left(op, now)
        if left is None:
            return op
        timeout = self.providers.timeout(op).total_seconds()
        if left < timeout + RENEW_MARGIN:
            return await self.ledger.renew(op, self.lease_for)
        return op

    async def _outcome(self, op: Operation, reply: Reply) -> o.CallOutcome:
        if reply.fetched is not None:
            fetched = reply.fetched
            # Checked as received; stored without the secrets it may echo
            # (docs/guarantees/secrets.md).
            stored, found = self.ledger.redactor(op).content(fetched.content)
            try:
                location = await self.blobs.put(stored)
            except ResultError as exc:
                return o.ResultMissing(reason=f"the result could not be stored: {exc}")
            candidate = Candidate(
                content=fetched.content,
                content_type=fetched.content_type,
                stated_checksum=fetched.checksum,
                stated_records=fetched.record_count,
            )
            rules = _rules(op, self.providers.result_spec(op))
            if fetched.jsonl is not None:
                rules = evolve(rules, jsonl=fetched.jsonl)
            summary = validate(candidate, rules, location)
            if found:
                summary = _stored_redacted(summary, stored, found)
            return o.ResultChecked(summary=summary, request_id=fetched.request_id)
        outcome = reply.outcome
        assert outcome is not None
        if isinstance(outcome, o.SyncResult | o.Observed) and outcome.content is not None:
            stored, _ = self.ledger.redactor(op).content(outcome.content)
            try:
                location = await self.blobs.put(stored)
            except ResultError as exc:
                # The job exists and answered: record that, and let collection end the
                # operation `result_unavailable` with the reason.
                location = f"{UNSTORED} the result could not be stored: {exc}"
            return evolve(outcome, content=stored, location=location)
        return outcome

    async def _collect_locally(self, op: Operation) -> Reply:
        if op.inline_result is None:
            summary = ResultSummary(valid=True, checks=("none declared",))
            return Reply(outcome=o.ResultChecked(summary=summary), detail={})
        try:
            content = await self.blobs.read(op.inline_result)
        except ResultError as exc:
            reason = f"the stored synchronous result cannot be read: {exc}"
            return Reply(outcome=o.ResultMissing(reason=reason), detail={"error": reason})
        candidate = Candidate(content=content, content_type="application/json")
        summary = validate(candidate, _rules(op, self.providers.result_spec(op)), op.inline_result)
        return Reply(outcome=o.ResultChecked(summary=summary), detail={"inline": True})


def _not_sent(op: Operation, forged: str) -> Reply:
    """A create refused here: the stored submission is not the audited one, so what would
    be sent is not what was submitted (or not under its token). Nothing is sent."""
    reason = f"not sent: {forged}; a person must look at this ledger (audit verify --replay)"
    log.error("refusing to create: %s", reason, extra=_fields(op))
    return Reply(outcome=o.Rejected(reason=reason), detail={"sent": False, "error": reason})


def _stored_redacted(summary: ResultSummary, stored: bytes, found: int) -> ResultSummary:
    """The summary of the stored copy: its hash and size, and a check saying what changed."""
    note = (
        f"secrets_removed: {found} secret value(s) the provider echoed were replaced by "
        f"{REDACTED} in the stored copy; the checks above ran on the content as received"
    )
    return evolve(
        summary,
        sha256=hashlib.sha256(stored).hexdigest(),
        size=len(stored),
        checks=(*summary.checks, note),
    )


def _collects_locally(op: Operation) -> bool:
    return op.inline_result is not None or op.capabilities.result is ResultMode.NONE


def _rules(op: Operation, rule: ResultSpec) -> Rules:
    expected = None
    if rule.expected_items_from_request:
        value = find(op.request.body, rule.expected_items_from_request)
        if isinstance(value, list):
            expected = len(value)
        elif isinstance(value, int) and not isinstance(value, bool):
            expected = value
    return Rules(
        content_type=rule.content_type,
        checksum_field=rule.checksum_field,
        schema=rule.schema,
        items_path=rule.items.path if rule.items else rule.records,
        item_status=rule.items.status if rule.items else None,
        item_ref=rule.items.ref if rule.items else "id",
        item_success=rule.items.success if rule.items else (),
        expected_items=expected,
        jsonl=rule.jsonl,
        allow_empty=rule.allow_empty or op.capabilities.empty_result,
    )


def _fields(op: Operation) -> dict[str, Any]:
    return {
        "operation_id": op.operation_id,
        "trace_id": op.trace_id,
        "remote_job_id": op.remote_job_id,
        "state": op.state.value,
    }
