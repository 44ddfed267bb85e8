"""What the record says of the order of a cancel and the end of the remote job.

jobtrail knows, on its own clock, when it recorded a cancel, when it sent it and when the
provider acknowledged it, and when it first saw the job ended. It does not know when the job
ended, unless the provider's answer said so: the provider's own time on the observation that
first saw the end (`provider_updated_at`). Each sentence here states only an order those
recorded times support, and says "unknown" where they do not: a job seen ended after the
cancel was recorded may have finished long before (jobtrail was not looking).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from jobtrail.core.model import Attempt, AttemptKind, Observation, Operation, Transition
from jobtrail.core.states import Evidence, State
from jobtrail.core.words import iso

# The states in which a job we asked to cancel ended otherwise (or is being collected).
_ENDED_OTHERWISE = frozenset(
    {
        State.SUCCEEDED,
        State.FAILED,
        State.RESULT_COLLECTING,
        State.RESULT_UNAVAILABLE,
        State.RESULT_VALIDATION_FAILED,
    }
)
_ACKNOWLEDGED = "cancel_acknowledged"


def provider_time(text: str | None) -> datetime | None:
    """A provider's timestamp as it was recorded, when it is an ISO 8601 time with its zone
    (`2026-12-01T10:00:12Z`); None when there is none or it cannot be read as one (a time
    without a zone cannot be compared with the ledger's)."""
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return value if value.tzinfo is not None else None


def first_end(observations: Sequence[Observation]) -> Observation | None:
    """The observation that first saw the job in a terminal state, or None."""
    ended = [ob for ob in observations if ob.remote_status.terminal]
    return min(ended, key=lambda ob: ob.observed_at) if ended else None


def _sent_cancels(attempts: Sequence[Attempt]) -> list[Attempt]:
    """Cancel calls that may have reached the provider (one stopped before sending did not)."""
    return [
        a
        for a in attempts
        if a.kind is AttemptKind.CANCEL
        and not (isinstance(a.detail, dict) and a.detail.get("sent") is False)
    ]


def cancel_order(
    op: Operation,
    history: Sequence[Transition],
    attempts: Sequence[Attempt],
    observations: Sequence[Observation],
) -> str | None:
    """How a job we asked to cancel ended otherwise, with only the order the record holds;
    None when no cancel was asked for or the operation did not end otherwise."""
    intent = op.cancel_intent
    if intent is None or op.state not in _ENDED_OTHERWISE:
        return None
    if history and history[-1].evidence is Evidence.WITHDRAWN:
        return "withdrawn: the cancel came before any create was sent, so no remote job exists"
    return f"{op.state}, not cancelled: " + _order(intent.requested_at, attempts, observations)


def _order(
    asked: datetime, attempts: Sequence[Attempt], observations: Sequence[Observation]
) -> str:
    end = first_end(observations)
    if end is None:
        return (
            "no observation of the job's end is recorded, so its order with the cancel is unknown"
        )
    word = end.remote_state or end.remote_status.value
    seen = end.observed_at
    if seen < asked:
        return (
            f"the job was seen ended {word} at {iso(seen)}, before the cancel was recorded "
            f"({iso(asked)})"
        )
    sent = _sent_cancels(attempts)
    if not sent:
        return (
            f"the job ended {word} (first seen ended at {iso(seen)}) before any cancel was "
            f"sent: the cancel recorded at {iso(asked)} never reached the provider"
        )
    return _ended_after_asking(word, asked, sent, end)


def _ended_after_asking(word: str, asked: datetime, sent: list[Attempt], end: Observation) -> str:
    """The job was first seen ended after the cancel was recorded and sent: only the
    provider's own end time, if its answer gave one, can order the two."""
    sent_at = sent[0].started_at
    acked = next((a.finished_at for a in sent if a.outcome == _ACKNOWLEDGED), None)
    ended = provider_time(end.provider_updated_at)
    if ended is None:
        return (
            f"the job ended {word}; whether it finished before the cancel reached the "
            f"provider is unknown (the cancel was recorded at {iso(asked)} and sent at "
            f"{iso(sent_at)}; the job was first seen ended at {iso(end.observed_at)}, and the "
            "provider's answer gave no time of its end)"
        )
    by = f"the job ended {word} at {iso(ended)} by the provider's own clock"
    if ended < asked:
        return f"{by}, before the cancel was recorded ({iso(asked)})"
    if ended < sent_at:
        return f"{by}, after the cancel was recorded ({iso(asked)}) but before it was sent"
    if acked is not None and ended > acked:
        return f"{by}, after the provider acknowledged the cancel ({iso(acked)})"
    return (
        f"{by}, while the cancel was on its way (sent at {iso(sent_at)}); whether it "
        "finished before the cancel reached the provider is unknown"
    )
