"""One application of an outcome: the working copy of a record, and the only way to move it.

Every state change goes through `Draft.move`, which checks the transition table, so no outcome
can move an operation without the evidence the table asks for.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from jobtrail.core import outcomes as o
from jobtrail.core.model import Observation, Operation, Transition, evolve
from jobtrail.core.plan import deadline_in_force
from jobtrail.core.schedule import POLL_DEFAULTS, Backoff, Bounds, Refusals, next_call_at
from jobtrail.core.states import Evidence, State, check_transition


@dataclass(frozen=True, kw_only=True)
class Schedule:
    """Scheduling choices. `rand` is the only source of randomness the core uses."""

    rand: random.Random
    poll: Backoff = field(default_factory=Backoff)
    retry: Backoff = field(
        default_factory=lambda: Backoff(
            base=POLL_DEFAULTS.retry_initial, cap=POLL_DEFAULTS.retry_cap
        )
    )
    bounds: Bounds = field(default_factory=Bounds)
    refusals: Refusals = field(default_factory=Refusals)


@dataclass(frozen=True, kw_only=True)
class Applied:
    operation: Operation
    transitions: tuple[Transition, ...]
    observations: tuple[Observation, ...]


class Draft:
    def __init__(self, op: Operation, now: datetime, actor: str, schedule: Schedule) -> None:
        self.op, self.now, self.actor, self.schedule = op, now, actor, schedule
        self.transitions: list[Transition] = []
        self.observations: list[Observation] = []

    def move(self, to: State, evidence: Evidence, cause: str, actor: str | None = None) -> None:
        check_transition(self.op.state, to, evidence)
        self.transitions.append(
            Transition(
                operation_id=self.op.operation_id,
                at=self.now,
                actor=actor or self.actor,
                from_state=self.op.state,
                to_state=to,
                evidence=evidence,
                cause=cause,
                remote_job_id=self.op.remote_job_id,
            )
        )
        self.op = evolve(self.op, state=to)

    def set(self, **changes: Any) -> None:
        self.op = evolve(self.op, **changes)

    def now_next(self) -> None:
        self.set(next_poll_at=self.now)

    def schedule_poll(self, retry_after: str | None, *, throttled: bool = False) -> None:
        when = next_call_at(
            now=self.now,
            attempt=self.op.poll_count,
            retry_after=retry_after,
            backoff=self.schedule.poll,
            rand=self.schedule.rand,
            bounds=self.schedule.bounds,
            throttled=throttled,
        )
        self.set(next_poll_at=when, poll_count=self.op.poll_count + 1)

    def schedule_retry(
        self, retry_after: str | None, attempt: int, *, throttled: bool = False
    ) -> None:
        when = next_call_at(
            now=self.now,
            attempt=attempt,
            retry_after=retry_after,
            backoff=self.schedule.retry,
            rand=self.schedule.rand,
            bounds=self.schedule.bounds,
            throttled=throttled,
        )
        self.set(next_poll_at=when)

    def observe(self, source: str, outcome: o.Observed | o.Accepted, ref: str | None) -> None:
        progress = outcome.progress if isinstance(outcome, o.Observed) else None
        updated = outcome.provider_updated_at if isinstance(outcome, o.Observed) else None
        usage = outcome.usage if isinstance(outcome, o.Observed) else None
        self.observations.append(
            Observation(
                operation_id=self.op.operation_id,
                source=source,
                observed_at=self.now,
                remote_state=outcome.remote_state,
                remote_status=outcome.remote_status,
                provider_updated_at=updated,
                progress=progress,
                ref=ref,
                request_id=outcome.request_id,
                last_seen_at=self.now,
                last_progress=progress,
                # kept with the final reading: a running job's counts change at every read
                usage=usage if outcome.remote_status.terminal else None,
            )
        )
        changes: dict[str, Any] = {
            "remote_state": outcome.remote_state,
            "remote_status": outcome.remote_status,
        }
        if progress is not None:
            changes["progress"] = progress
        if usage is not None:
            changes["usage"] = usage
        self.set(**changes)

    def result(self) -> Applied:
        op = evolve(self.op, updated_at=self.now)
        if op.state.ends_automation:
            op = evolve(op, next_poll_at=None)
        elif op.next_poll_at is not None:
            op = evolve(op, next_poll_at=self._bounded(op.next_poll_at))
        return Applied(
            operation=op,
            transitions=tuple(self.transitions),
            observations=tuple(self.observations),
        )

    def _bounded(self, when: datetime) -> datetime:
        """No wait reaches past the schedule's ceiling or the deadline in force, whichever
        outcome chose it: at the deadline the plan escalates instead of calling."""
        latest = self.now + timedelta(seconds=self.schedule.bounds.ceiling)
        deadline = deadline_in_force(self.op)
        if deadline is not None:
            latest = min(latest, deadline)
        return min(when, latest)


def cause_of(kind: str, ref: str | None) -> str:
    return f"{kind}:{ref}" if ref else kind


def seen_again(
    op: Operation, now: datetime, retry_after: str | None, schedule: Schedule
) -> Operation:
    """`op` after a status read whose answer equals the last one read, which the core judged
    then without a move: what applying that outcome again makes of the record (an unchanged
    running read, core/apply.py `_on_observed`), the poll counted and the next one scheduled
    by the answer's Retry-After (as received) or the backoff, with jitter, within bounds and
    the deadline in force. Everything else it would set holds already."""
    draft = Draft(op, now, "", schedule)
    draft.schedule_poll(retry_after)
    return draft.result().operation
