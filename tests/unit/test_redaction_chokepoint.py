"""The ledger's redaction chokepoint covers every recorded part of a change, and a provider
answer is redacted before the core compares it with what is stored."""

from __future__ import annotations

from jobtrail.audit import AuditEntry
from jobtrail.core import outcomes as o
from jobtrail.core.model import (
    Attempt,
    AttemptKind,
    ItemCounts,
    Observation,
    ResultSummary,
    Transition,
)
from jobtrail.core.redact import Redactor
from jobtrail.core.states import Evidence, RemoteStatus, State
from jobtrail.redaction import redacted, redacted_outcome
from jobtrail.store.base import Change

from factories import T0, make_op

SECRET = "tok_live_5f2c9a8e7d6b4a31-DO-NOT-LEAK"
R = Redactor().extended(values=[SECRET])


def test_every_recorded_part_of_a_change_loses_the_secret() -> None:
    """Operation fields, transitions, observations, attempts and audit data all pass."""
    s = SECRET
    op = make_op(
        remote_job_id=f"job_{s}",
        remote_state=f"running {s}",
        progress={"note": s, s: [s[:30]]},
        status_url=f"/v1/jobs/1?echo={s}",
        candidate_job_id=s,
        conflicting_job_ids=(s,),
        result=ResultSummary(
            valid=True,
            content_type=s,
            checks=(s,),
            problems=(f"checksum mismatch: provider stated {s[:16]}…",),
            items=ItemCounts(total=1, succeeded=0, failed=1, failed_refs=(f"item-{s}",)),
        ),
    )
    attempt = Attempt(
        attempt_id="at_1",
        operation_id=op.operation_id,
        kind=AttemptKind.STATUS,
        fence=1,
        actor="w",
        started_at=T0,
        request={"url": f"http://x/?{s}"},
        outcome="Observed",
        provider_request_id=f"req_{s}",
        detail={"body": {"error": {"message": f"bad token {s}"}}},
    )
    change = Change(
        operation=op,
        transitions=[
            Transition(
                operation_id=op.operation_id,
                at=T0,
                actor="w",
                from_state=State.OBSERVING,
                to_state=State.FAILED,
                evidence=Evidence.OBSERVED_FAILED,
                cause=f"observation: {s}",
                remote_job_id=s,
            )
        ],
        observations=[
            Observation(
                operation_id=op.operation_id,
                source="webhook",
                observed_at=T0,
                remote_state=s,
                remote_status=RemoteStatus.UNKNOWN,
                provider_updated_at=s,
                progress=[s],
                ref=s,
                event_id=s,
                request_id=s,
                last_progress={"note": s},
            )
        ],
        attempt_started=attempt,
        attempt_finished=attempt,
        safe_read=attempt,
        audit=[AuditEntry(at=T0, operation_id=None, kind="k", actor="w", data={"d": [s]})],
    )
    assert SECRET in repr(change)
    clean = repr(redacted(change, R))
    assert not any(SECRET[i : i + 16] in clean for i in range(len(SECRET) - 15)), clean
    assert clean.count("[redacted]") >= 23


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
