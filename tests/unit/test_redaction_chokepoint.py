"""The ledger's redaction chokepoint covers every recorded part of a change, and a provider
answer is redacted before the core compares it with what is stored."""

from __future__ import annotations

import pytest

from jobtrail.core import outcomes as o
from jobtrail.core.audit import AuditEntry
from jobtrail.core.model import (
    Attempt,
    AttemptKind,
    ItemCounts,
    Observation,
    ResultSummary,
    Transition,
)
from jobtrail.core.redact import REDACTED, Redactor
from jobtrail.core.states import Evidence, RemoteStatus, State
from jobtrail.ledger.redaction import redacted, redacted_outcome
from jobtrail.store.changes import Change

from factories import T0, make_op

SECRET = "tok_live_5f2c9a8e7d6b4a31-DO-NOT-LEAK"
R = Redactor().extended(values=[SECRET])


SPOTS = (
    "op.remote_job_id",
    "op.remote_state",
    "op.progress",
    "op.progress key",
    "op.status_url",
    "op.candidate_job_id",
    "op.conflicting_job_ids",
    "result.content_type",
    "result.checks",
    "result.problems",
    "result.failed_refs",
    "attempt.request",
    "attempt.request sensitive field",
    "attempt.provider_request_id",
    "attempt.detail",
    "transition.cause",
    "transition.remote_job_id",
    "observation.remote_state",
    "observation.provider_updated_at",
    "observation.progress",
    "observation.ref",
    "observation.event_id",
    "observation.request_id",
    "observation.last_progress",
    "audit.data",
    "audit.actor",
)


def _change(dirty: frozenset[str]) -> Change:
    """A change with the secret in the `dirty` spots and harmless values elsewhere."""

    def v(spot: str, text: str = "{}") -> str:
        return text.format(SECRET if spot in dirty else "plain-value")

    op = make_op(
        remote_job_id=v("op.remote_job_id", "job_{}"),
        remote_state=v("op.remote_state", "running {}"),
        progress={"note": v("op.progress"), v("op.progress key"): [v("op.progress")[:30]]},
        status_url=v("op.status_url", "/v1/jobs/1?echo={}"),
        candidate_job_id=v("op.candidate_job_id"),
        conflicting_job_ids=(v("op.conflicting_job_ids"),),
        result=ResultSummary(
            valid=True,
            content_type=v("result.content_type"),
            checks=(v("result.checks"),),
            problems=(v("result.problems", "checksum mismatch: provider stated {}…"),),
            items=ItemCounts(
                total=1, succeeded=0, failed=1, failed_refs=(v("result.failed_refs", "item-{}"),)
            ),
        ),
    )
    sensitive = "access_token" if "attempt.request sensitive field" in dirty else "note"
    attempt = Attempt(
        attempt_id="at_1",
        operation_id=op.operation_id,
        kind=AttemptKind.STATUS,
        fence=1,
        actor="w",
        started_at=T0,
        request={"url": v("attempt.request", "http://x/?{}"), sensitive: "abc", "token": REDACTED},
        outcome="Observed",
        provider_request_id=v("attempt.provider_request_id", "req_{}"),
        detail={"body": {"error": {"message": v("attempt.detail", "bad token {}")}}},
    )
    return Change(
        operation=op,
        transitions=[
            Transition(
                operation_id=op.operation_id,
                at=T0,
                actor="w",
                from_state=State.OBSERVING,
                to_state=State.FAILED,
                evidence=Evidence.OBSERVED_FAILED,
                cause=v("transition.cause", "observation: {}"),
                remote_job_id=v("transition.remote_job_id"),
            )
        ],
        observations=[
            Observation(
                operation_id=op.operation_id,
                source="webhook",
                observed_at=T0,
                remote_state=v("observation.remote_state"),
                remote_status=RemoteStatus.UNKNOWN,
                provider_updated_at=v("observation.provider_updated_at"),
                progress=[v("observation.progress")],
                ref=v("observation.ref"),
                event_id=v("observation.event_id"),
                request_id=v("observation.request_id"),
                last_progress={"note": v("observation.last_progress")},
            )
        ],
        attempt_started=attempt,
        attempt_finished=attempt,
        safe_read=attempt,
        audit=[
            AuditEntry(
                at=T0,
                operation_id=None,
                kind="k",
                actor=v("audit.actor", "w-{}"),
                data={"d": [v("audit.data")]},
            )
        ],
    )


def _leaks(text: str) -> bool:
    return any(SECRET[i : i + 16] in text for i in range(len(SECRET) - 15))


def test_every_recorded_part_of_a_change_loses_the_secret() -> None:
    """Operation fields, transitions, observations, attempts and audit data all pass."""
    change = _change(frozenset(SPOTS))
    assert SECRET in repr(change)
    clean = repr(redacted(change, R))
    assert not _leaks(clean), clean
    assert clean.count("[redacted]") >= 23


@pytest.mark.parametrize("spot", SPOTS)
def test_a_secret_in_any_one_part_is_caught_by_the_look_at_the_whole_change(spot: str) -> None:
    """The one look that lets a clean change through unwalked sees every recorded part."""
    change = _change(frozenset({spot}))
    clean = redacted(change, R)
    assert clean != change
    assert not _leaks(repr(clean)), spot
    assert "'access_token': 'abc'" not in repr(clean)


def test_a_change_with_nothing_to_hide_is_kept_as_it_is() -> None:
    """No secret and no sensitive field holding more than `[redacted]`: no copy, no walk."""
    change = _change(frozenset())
    assert redacted(change, R) is change


def test_a_provider_answer_is_redacted_before_it_is_applied() -> None:
    """An Observed outcome's word, progress and request id lose the secret; its mapped status
    (read from the raw word by the parser) stays."""
    observed = o.Observed(
        remote_state=f"running {SECRET}",
        remote_status=RemoteStatus.RUNNING,
        progress={"note": SECRET},
        request_id=SECRET,
    )
    clean = redacted_outcome(observed, R)
    assert clean.remote_state == "running [redacted]"
    assert clean.progress == {"note": "[redacted]"} and clean.request_id == "[redacted]"
    assert clean.remote_status is RemoteStatus.RUNNING
    plain = o.Observed(remote_state="running", remote_status=RemoteStatus.RUNNING)
    assert redacted_outcome(plain, R) is plain  # nothing to hide: no copy
