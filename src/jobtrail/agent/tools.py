"""The agent tools as plain async methods over a Ledger; the MCP server only adapts them.

Each method parses its input, calls the ledger (or the views), and returns a record from
`shapes`. Errors are `JobtrailError`s whose message is one sentence saying what happened and
what the agent can do next. Every read names its `actor`: the ledger's action policy says
which operations that agent may read (by default, those it submitted)."""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import fields
from datetime import datetime
from pathlib import Path
from typing import Any

from jobtrail.agent.content import read_stored
from jobtrail.agent.shapes import (
    CancelRecorded,
    Explanation,
    ItemsView,
    JobList,
    JobSummary,
    JobView,
    ResultView,
    Submitted,
    TransitionView,
    WaitedJob,
)
from jobtrail.agent.waiting import (
    PROGRESS_EVERY_SECONDS,
    WAIT_DEFAULT_SECONDS,
    Progress,
    instruction,
    progress_words,
)
from jobtrail.core.model import Operation, Transition
from jobtrail.core.nextstep import next_step, remote_may_run
from jobtrail.core.states import State
from jobtrail.core.words import iso
from jobtrail.errors import InvalidInput, NotFound
from jobtrail.ledger import Ledger
from jobtrail.ledger.policy import Action
from jobtrail.presentation.views import OperationView, operation_view
from jobtrail.providers.code.contract import CodeSpec
from jobtrail.providers.file.config import ProviderSpec, find_provider_named
from jobtrail.results import ResultStore
from jobtrail.services.story import read_story

WAIT_CAP_SECONDS = 120.0
WAIT_POLL_SECONDS = 0.25
RECENT_TRANSITIONS = 5
# A provider is named, never given as a path: the server reads only its own provider folder.
_PROVIDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")
LIST_CAP = 200
FAILED_REFS_SHOWN = 50


class AgentTools:
    def __init__(
        self,
        ledger: Ledger,
        *,
        worker_running: bool,
        find: Callable[[str], ProviderSpec | CodeSpec] = find_provider_named,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        wake: Callable[[], None] = lambda: None,
        results: ResultStore | None = None,
        data_dir: Path | None = None,
    ) -> None:
        self.ledger = ledger
        self.results = results  # reads results kept outside files (db:, s3://)
        self.data_dir = data_dir  # finds result files recorded at older, relative locations
        self.worker_running = worker_running
        self._find, self._sleep, self._monotonic = find, sleep, monotonic
        self._wake = wake  # tells an in-process worker there is work now

    def wake(self) -> None:
        """Tell an in-process worker there is work now."""
        self._wake()

    # -- asking --------------------------------------------------------------------------

    async def submit_job(
        self,
        provider: str,
        request: Any,
        *,
        key: str,
        reason: str,
        actor: str,
        path: dict[str, str] | None = None,
    ) -> Submitted:
        if not _PROVIDER_NAME.fullmatch(provider):
            raise InvalidInput(
                f"provider must be the name of a configured provider (letters, digits, - and "
                f"_), not {provider[:60]!r}"
            )
        if not isinstance(request, dict):
            raise InvalidInput("request must be a JSON object: the body sent to the provider")
        spec = self._find(provider)
        op, existing = await self.ledger.admit(
            spec, request, path=path, key=key, actor=actor, reason=reason or None
        )
        if existing:  # the key names an operation already there: whose may be another's
            await self.ledger.permit(Action.READ, actor, op)
        self._wake()
        if existing:
            step = (
                f"key {key!r} already names this operation with the same request, so nothing "
                f"new was recorded; it is {op.state}. Follow it with wait_job or get_job."
            )
        elif self.worker_running:
            step = (
                "recorded before anything was sent; this server's worker sends it within "
                "seconds. Call wait_job to follow it and get_result once it has succeeded."
            )
        else:
            step = (
                "recorded before anything was sent; a separate `jobtrail worker` sends it (this "
                "server runs none). Call wait_job to follow it."
            )
        return Submitted(
            operation_id=op.operation_id,
            key=op.key,
            provider=op.provider,
            state=op.state.value,
            existing=existing,
            next_step=step,
        )

    async def cancel_job(self, operation_id: str, *, reason: str, actor: str) -> CancelRecorded:
        await self._exists(operation_id)  # the cancel policy decides, not the read policy
        op = await self.ledger.cancel(operation_id, actor=actor, reason=reason)
        self._wake()
        intent = op.cancel_intent
        assert intent is not None  # Ledger.cancel returns the record holding the intent
        now = self.ledger.now()
        if op.state.ends_automation:
            step = f"automation has ended for this operation: it is {op.state}."
        else:
            step = (
                f"the intent is recorded; jobtrail's next step: {next_step(op, now)}. The job "
                "stops only when the provider confirms it, and it may still succeed or fail "
                "first; follow it with wait_job."
            )
        return CancelRecorded(
            operation_id=op.operation_id,
            state=op.state.value,
            cancel_requested_by=intent.actor,
            cancel_reason=intent.reason,
            requested_at=iso(intent.requested_at),
            remote_may_still_run=remote_may_run(op),
            next_step=step,
        )

    # -- reading -------------------------------------------------------------------------

    async def get_job(self, operation_id: str, *, actor: str) -> JobView:
        return JobView(**await self._view(await self._get(operation_id, actor)))

    async def wait_job(
        self,
        operation_id: str,
        timeout_seconds: float = WAIT_DEFAULT_SECONDS,
        progress: Progress | None = None,
        *,
        actor: str,
    ) -> WaitedJob:
        """Wait for a change of state, at most the bound given (capped); `progress` is told
        what the operation is doing while the call waits (MCP progress notifications)."""
        if math.isnan(timeout_seconds):
            raise InvalidInput("timeout_seconds must be a number of seconds")
        timeout = min(max(timeout_seconds, 0.0), WAIT_CAP_SECONDS)
        started = self._monotonic()
        op = await self._get(operation_id, actor)
        first, told = op.state, -PROGRESS_EVERY_SECONDS
        while op.state is first and not op.state.ends_automation:
            waited = self._monotonic() - started
            if progress is not None and waited - told >= PROGRESS_EVERY_SECONDS:
                told = waited
                await progress(waited, timeout, progress_words(op, self.ledger.now()))
            if timeout - waited <= 0:
                break
            await self._sleep(min(WAIT_POLL_SECONDS, timeout - waited))
            op = await self._exists(op.operation_id)
        return WaitedJob(
            **await self._view(op),
            changed=op.state is not first,
            waited_seconds=round(self._monotonic() - started, 3),
            call_again=not op.state.ends_automation,
            instruction=instruction(op),
        )

    async def get_result(self, operation_id: str, *, actor: str) -> ResultView:
        op = await self._get(operation_id, actor)
        summary = op.result
        if summary is None:
            return _no_result(op, self.ledger.now())
        items = summary.items
        planted = await self.ledger.result_problem(op)  # not the result its collection audited
        read = (
            await read_stored(
                summary.location, self.results, sha256=summary.sha256, data_dir=self.data_dir
            )
            if summary.location and planted is None
            else None
        )
        note = read.note if read else planted or "no stored content is recorded for this result"
        changed = [planted] if planted else [read.problem] if read and read.problem else []
        valid = summary.valid and not changed
        if not valid:
            note = "the result FAILED validation (see problems); " + note
        return ResultView(
            operation_id=op.operation_id,
            state=op.state.value,
            available=True,
            valid=valid,
            problems=[*summary.problems, *changed],
            checks=list(summary.checks),
            content_type=summary.content_type,
            size=summary.size,
            sha256=summary.sha256,
            records=summary.records,
            items=ItemsView(
                total=items.total,
                succeeded=items.succeeded,
                failed=items.failed,
                failed_refs=list(items.failed_refs[:FAILED_REFS_SHOWN]),
            )
            if items
            else None,
            location=summary.location,
            content=read.content if read else None,
            preview=read.preview if read else None,
            note=_partial_note(op, note) if summary.partial else note,
            partial=summary.partial,
            usage=op.usage,
        )

    async def list_jobs(self, state: str | None = None, limit: int = 20, *, actor: str) -> JobList:
        """The newest operations `actor` may read (others are left out, not refused)."""
        try:
            states = [State(state)] if state else []
        except ValueError:
            raise InvalidInput(
                f"unknown state {state!r}; use one of {', '.join(s.value for s in State)}"
            ) from None
        ops = await self.ledger.readable_operations(
            actor, states=states, limit=min(max(limit, 1), LIST_CAP)
        )
        jobs = [
            JobSummary(
                operation_id=op.operation_id,
                key=op.key,
                provider=op.provider,
                state=op.state.value,
                remote_job_id=op.remote_job_id,
                remote_state=op.remote_state,
                actor=op.actor,
                created_at=iso(op.created_at),
            )
            for op in ops
        ]
        return JobList(jobs=jobs, count=len(jobs))

    async def explain_job(self, operation_id: str, *, actor: str) -> Explanation:
        op = await self._get(operation_id, actor)
        text = (await read_story(self.ledger, op)).text()
        return Explanation(operation_id=op.operation_id, state=op.state.value, explanation=text)

    # -- the ends of tasks (agent/tasks.py): what the call would have answered -----------

    async def submitted_outcome(self, op: Operation, *, existing: bool, actor: str) -> Submitted:
        """A `submit_job` call's answer once its operation's automation has ended, with
        the result: what a task opened by submit_job completes with (for `actor`, the
        task's owner)."""
        return Submitted(
            operation_id=op.operation_id,
            key=op.key,
            provider=op.provider,
            state=op.state.value,
            existing=existing,
            next_step=_ended_step(op, self.ledger.now()),
            result=await self.get_result(op.operation_id, actor=actor),
        )

    async def waited_outcome(self, op: Operation, *, since: datetime, actor: str) -> WaitedJob:
        """A `wait_job` call's answer once its operation's automation has ended (a task
        opened by wait_job lasts that long), with the result."""
        return WaitedJob(
            **await self._view(op),
            changed=True,
            waited_seconds=round((self.ledger.now() - since).total_seconds(), 3),
            result=await self.get_result(op.operation_id, actor=actor),
            instruction=instruction(op),
        )

    # -- helpers -------------------------------------------------------------------------

    async def _get(self, operation_id: str, actor: str) -> Operation:
        """The operation, when `actor` may read it (NotPermitted, audited, when not)."""
        try:
            return await self.ledger.read_as(operation_id, actor)
        except NotFound:
            raise _unknown(operation_id) from None

    async def _exists(self, operation_id: str) -> Operation:
        try:
            return await self.ledger.get(operation_id)
        except NotFound:
            raise _unknown(operation_id) from None

    async def _view(self, op: Operation) -> dict[str, Any]:
        """`op` as a JobView's fields: those of its OperationView (never the record's
        token or fingerprint), and the agents' own."""
        ledger, op_id = self.ledger, op.operation_id
        view = operation_view(
            op,
            ledger.now(),
            attempts=await ledger.attempts(op_id),
            observations=await ledger.observations(op_id),
        )
        history = await ledger.history(op_id)
        return {f.name: getattr(view, f.name) for f in fields(OperationView)} | {
            "has_result": op.result is not None,
            "cancel_requested_by": op.cancel_intent.actor if op.cancel_intent else None,
            "recent_transitions": [_transition(tr) for tr in history[-RECENT_TRANSITIONS:]],
        }


def _unknown(operation_id: str) -> NotFound:
    return NotFound(
        f"no operation {operation_id[:80]!r} in this ledger; list_jobs shows the operations "
        "you may read"
    )


def _ended_step(op: Operation, now: datetime) -> str:
    if op.state is State.SUCCEEDED:
        return "the job succeeded; `result` holds its collected result (get_result reads it again)"
    return f"the operation is {op.state}: {next_step(op, now)}; explain_job tells its story"


def _transition(tr: Transition) -> TransitionView:
    return TransitionView(
        at=iso(tr.at),
        actor=tr.actor,
        from_state=tr.from_state.value,
        to_state=tr.to_state.value,
        evidence=tr.evidence.value,
        cause=tr.cause,
    )


def _no_result(op: Operation, now: datetime) -> ResultView:
    if op.state.ends_automation:
        note = f"there is no result: the operation ended {op.state}"
    else:
        note = (
            f"no result yet: the operation is {op.state}; wait_job follows it "
            f"(next: {next_step(op, now)})"
        )
    return ResultView(
        operation_id=op.operation_id,
        state=op.state.value,
        available=False,
        valid=None,
        problems=[],
        checks=[],
        content_type=None,
        size=None,
        sha256=None,
        records=None,
        items=None,
        location=None,
        content=None,
        preview=None,
        note=note,
        usage=op.usage,
    )


def _partial_note(op: Operation, note: str) -> str:
    return (
        f"a PARTIAL result: what the job finished before it ended {op.state} (not a success); "
        + note
    )
