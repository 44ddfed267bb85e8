"""How a simulated job moves: pure functions of the job and ``now``.

The provider is lazy on purpose: a poll-driven job only advances when it is
read, so a test controls its timeline exactly by counting reads. A job with
``duration_seconds`` also advances on a timer (set up by the server), so a
webhook-only client still sees it finish.
"""

from __future__ import annotations

from dataclasses import dataclass

from jobtrail.simulator.records import SimJob


@dataclass(frozen=True, kw_only=True, slots=True)
class JobChange:
    """One state change, the unit a webhook event reports."""

    state: str
    version: int
    updated_ts: float


def advance(job: SimJob, now: float, *, read: bool) -> list[JobChange]:
    """Move ``job`` forward for one status read (``read``) or one timer tick; return its changes."""
    if job.terminal:
        return []
    if read:
        job.advances += 1
    faults = job.faults
    if job.cancel_requested:
        if faults.cancel == "honour":
            return _finish(job, "cancelled", now)
        if faults.cancel == "race":
            # completion crossed its commit point before the cancel arrived
            return _finish(job, "succeeded", now)
        # "ignore": acknowledged, then forgotten; the job carries on below
    total = job.total
    if faults.never_finish:
        # progress may even reach 100 %: a client must not read that as "done"
        return _run(job, min(total, job.advances), now)
    if faults.duration_seconds is not None:
        elapsed = now - job.created_ts
        if elapsed >= faults.duration_seconds:
            return _finish(job, faults.outcome, now)
        return _run(job, int(total * elapsed / faults.duration_seconds), now)
    if job.advances >= faults.duration_polls:
        return _finish(job, faults.outcome, now)
    return _run(job, total * job.advances // faults.duration_polls, now)


def request_cancel(job: SimJob) -> bool:
    """Record a cancel request; False when the provider refuses it (terminal job or ``reject``)."""
    if job.terminal or job.faults.cancel == "reject":
        return False
    job.cancel_requested = True
    job.cancel_requests += 1
    return True


def create_succeeded(job: SimJob, now: float) -> None:
    """A synchronous result: the job is born finished."""
    job.state = "succeeded"
    job.completed = job.total
    job.touch(now)


def _run(job: SimJob, completed: int, now: float) -> list[JobChange]:
    changes: list[JobChange] = []
    if job.state != "running":
        changes.append(_set_state(job, "running", now))
    if completed != job.completed:
        job.completed = completed
        job.touch(now)
    return changes


def _finish(job: SimJob, state: str, now: float) -> list[JobChange]:
    changes: list[JobChange] = []
    if state != "cancelled" and job.state == "queued":
        # real jobs pass through running; webhook consumers get both events
        changes.append(_set_state(job, "running", now))
    if state == "succeeded":
        job.completed = job.total
    elif state == "failed":
        job.error_code = "job_failed"
        job.error_message = "the simulated job failed (outcome=failed)"
    changes.append(_set_state(job, state, now))
    return changes


def _set_state(job: SimJob, state: str, now: float) -> JobChange:
    job.state = state
    job.version += 1
    job.touch(now)
    return JobChange(state=state, version=job.version, updated_ts=now)
