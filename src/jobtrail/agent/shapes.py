"""What the agent tools return. Frozen records with typed fields, so the MCP SDK derives
each tool's outputSchema from them and sends them as structuredContent.

No field here carries a credential, the idempotency token or the request headers: an agent
sees what it asked, what jobtrail observed and what jobtrail will do next."""

from __future__ import annotations

from dataclasses import dataclass

from jobtrail.presentation.views import OperationView


@dataclass(frozen=True, kw_only=True)
class TransitionView:
    """One recorded change of local state."""

    at: str | None
    actor: str
    from_state: str
    to_state: str
    evidence: str
    cause: str


@dataclass(frozen=True, kw_only=True)
class JobView(OperationView):
    """An operation as an agent follows it: its view (presentation/views.py), whether it
    holds a result, who asked for a cancel and its last transitions."""

    has_result: bool
    cancel_requested_by: str | None
    recent_transitions: list[TransitionView]


@dataclass(frozen=True, kw_only=True)
class WaitedJob(JobView):
    """An operation after waiting for its state to change; as the end of a task, with its
    result (when one was collected)."""

    changed: bool
    waited_seconds: float
    result: ResultView | None = None
    call_again: bool = False  # automation goes on: call wait_job again to keep waiting
    instruction: str = ""  # the same, in words


@dataclass(frozen=True, kw_only=True)
class Submitted:
    """The record of a submitted operation; nothing has been sent when this returns."""

    operation_id: str
    key: str
    provider: str
    state: str
    existing: bool
    next_step: str
    result: ResultView | None = None  # only as the end of a task: the collected result


@dataclass(frozen=True, kw_only=True)
class CancelRecorded:
    """A recorded intent to cancel. It is not a cancellation: the provider decides that."""

    operation_id: str
    state: str
    cancel_requested_by: str
    cancel_reason: str
    requested_at: str | None
    remote_may_still_run: bool
    next_step: str


@dataclass(frozen=True, kw_only=True)
class ItemsView:
    """Per-item outcomes of a batch result (at most 50 failed item refs are listed)."""

    total: int
    succeeded: int
    failed: int
    failed_refs: list[str]


@dataclass(frozen=True, kw_only=True)
class ResultView:
    """A collected result: what was checked, and the content or a bounded preview of it."""

    operation_id: str
    state: str
    available: bool
    valid: bool | None
    problems: list[str]
    checks: list[str]
    content_type: str | None
    size: int | None
    sha256: str | None
    records: int | None
    items: ItemsView | None
    location: str | None
    content: str | None
    preview: str | None
    note: str
    # what a job that ended failed or cancelled had finished: never a success
    partial: bool = False
    # what the provider reported of work done and billed (tokens, requests, billed units)
    usage: dict[str, float] | None = None


@dataclass(frozen=True, kw_only=True)
class JobSummary:
    """One line of a listing."""

    operation_id: str
    key: str
    provider: str
    state: str
    remote_job_id: str | None
    remote_state: str | None
    actor: str
    created_at: str | None


@dataclass(frozen=True, kw_only=True)
class JobList:
    """Operations, newest first."""

    jobs: list[JobSummary]
    count: int


@dataclass(frozen=True, kw_only=True)
class Explanation:
    """An operation's story in words: asked, remote job, observed, done next, timeline."""

    operation_id: str
    state: str
    explanation: str
