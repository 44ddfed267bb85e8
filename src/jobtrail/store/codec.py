"""Records <-> rows, shared by both dialects. A dialect supplies how it stores times.

The column lists and the writing half live here; the reading half is store/decode.py and
the value-level text (NUL-safe text, JSON, the provider document's key) store/text.py."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from datetime import datetime
from typing import Any

from jobtrail.core.audit import AuditEntry
from jobtrail.core.model import Attempt, CancelIntent, Observation, Operation, Transition
from jobtrail.store.decode import Decoder, TimeIn
from jobtrail.store.text import (
    LastOne,
    config_key,
    dump,
    keyed_config,
    load,
    load_shared,
    result_doc,
    result_summary,
    storable,
)
from jobtrail.store.text import fields_of as _fields_of
from jobtrail.store.text import shared_text as _shared_text

TimeOut = Callable[[datetime | None], Any]
__all__ = [  # the value-level words of store/text.py, where the stores and tests reach them
    "COLUMNS",
    "IMMUTABLE",
    "MUTABLE",
    "STORE_DECIDED",
    "Codec",
    "LastOne",
    "config_key",
    "dump",
    "keyed_config",
    "load",
    "load_shared",
    "result_doc",
    "result_summary",
    "run_closed",
    "selected",
    "storable",
]

IMMUTABLE = (
    "operation_id",
    "op_key",
    "provider",
    "provider_config",
    "provider_kind",
    "provider_version",
    "capabilities",
    "request",
    "fingerprint",
    "idempotency_token",
    "trace_id",
    "actor",
    "authorized_by",
    "reason",
    "created_at",
    "create_deadline",
    "cancel_timeout_s",
)
MUTABLE = (
    "result_deadline",
    "state",
    "remote_job_id",
    "remote_state",
    "remote_status",
    "progress",
    "status_url",
    "status_via",
    "candidate_job_id",
    "conflicting_job_ids",
    "next_poll_at",
    "poll_count",
    "create_attempts",
    "inflight_attempt",
    "cancel_intent",
    "cancel_deadline",
    "cancel_sent",
    "inline_result",
    "result",
    "updated_at",
    "refused_reads",
    "refused_since",
    "create_sent_at",
    "usage",
)
LEASE = ("fence", "lease_owner", "lease_expires_at", "version")
COLUMNS = IMMUTABLE + MUTABLE + LEASE
STORE_DECIDED = ("version", "next_poll_at", "fence", "lease_owner", "lease_expires_at")
_ALWAYS = frozenset({"next_poll_at", "updated_at"})

# One provider document serves every operation submitted under it, so it is stored once, in
# provider_configs under the SHA-256 of its text (migration 0008), and an operation's
# provider_config column holds that key. Rows written before 0008 hold the document itself
# (no document's text starts with "sha256:"), so a read falls back to the column.
_RESOLVED_CONFIG = (
    "coalesce((SELECT document FROM provider_configs WHERE digest = {p}provider_config), "
    "{p}provider_config) AS provider_config"
)


def selected(prefix: str = "") -> str:
    """The operation's columns for a SELECT or RETURNING list, the provider document
    resolved from its key. `prefix` qualifies them (a table alias and a dot)."""
    return ", ".join(
        _RESOLVED_CONFIG.format(p=prefix) if column == "provider_config" else prefix + column
        for column in COLUMNS
    )


class Codec(Decoder):
    def __init__(self, time_out: TimeOut, time_in: TimeIn) -> None:
        super().__init__(time_in)
        self.t_out = time_out
        self._mutable = self._mutable_encoders()

    def operation_row(self, op: Operation) -> dict[str, Any]:
        t = self.t_out
        return {
            "operation_id": op.operation_id,
            "op_key": storable(op.key),
            "provider": op.provider,
            "provider_config": _shared_text(op.provider_config),
            "provider_kind": op.provider_kind.value,
            "provider_version": op.provider_version,
            "capabilities": dump(_fields_of(op.capabilities)),
            "request": dump(_fields_of(op.request)),
            "fingerprint": op.fingerprint,
            "idempotency_token": op.idempotency_token,
            "trace_id": op.trace_id,
            "actor": storable(op.actor),
            "authorized_by": storable(op.authorized_by),
            "reason": storable(op.reason),
            "created_at": t(op.created_at),
            "create_deadline": t(op.create_deadline),
            "cancel_timeout_s": op.cancel_timeout.total_seconds(),
            **self.mutable_row(op),
            "fence": op.fence,
            "lease_owner": op.lease_owner,
            "lease_expires_at": t(op.lease_expires_at),
            "version": op.version,
        }

    def mutable_row(self, op: Operation, before: Operation | None = None) -> dict[str, Any]:
        """The mutable columns of `op`; given the record it was derived from, only those
        that changed (plus the poll and update times, which every step writes)."""
        row = {}
        for column, field, encode in self._mutable:
            value = getattr(op, field)
            if before is None or column in _ALWAYS or value != getattr(before, field):
                row[column] = encode(value)
        return row

    def _mutable_encoders(self) -> list[tuple[str, str, Callable[[Any], Any]]]:
        """(column, field, encoder) for every mutable column, in MUTABLE order."""
        t = self.t_out
        same: Callable[[Any], Any] = lambda value: value  # noqa: E731
        text = storable
        return [
            ("result_deadline", "result_deadline", t),
            ("state", "state", lambda state: state.value),
            ("remote_job_id", "remote_job_id", text),
            ("remote_state", "remote_state", text),
            ("remote_status", "remote_status", lambda status: status.value if status else None),
            ("progress", "progress", dump),
            ("status_url", "status_url", text),
            ("status_via", "status_via", text),
            ("candidate_job_id", "candidate_job_id", text),
            ("conflicting_job_ids", "conflicting_job_ids", lambda ids: dump(list(ids))),
            ("next_poll_at", "next_poll_at", t),
            ("poll_count", "poll_count", same),
            ("create_attempts", "create_attempts", same),
            ("inflight_attempt", "inflight_attempt", text),
            ("cancel_intent", "cancel_intent", lambda i: dump(self._intent(i)) if i else None),
            ("cancel_deadline", "cancel_deadline", t),
            ("cancel_sent", "cancel_sent", int),
            ("inline_result", "inline_result", text),
            ("result", "result", lambda result: dump(result_doc(result)) if result else None),
            ("updated_at", "updated_at", t),
            ("refused_reads", "refused_reads", same),
            ("refused_since", "refused_since", t),
            ("create_sent_at", "create_sent_at", t),
            ("usage", "usage", dump),
        ]

    def _intent(self, intent: CancelIntent | None) -> dict[str, Any] | None:
        if intent is None:
            return None
        doc = asdict(intent)
        doc["requested_at"] = intent.requested_at.isoformat()
        return doc

    def transition_row(self, tr: Transition) -> dict[str, Any]:
        return {
            "operation_id": tr.operation_id,
            "at": self.t_out(tr.at),
            "actor": storable(tr.actor),
            "from_state": tr.from_state.value,
            "to_state": tr.to_state.value,
            "evidence": tr.evidence.value,
            "cause": storable(tr.cause),
            "remote_job_id": storable(tr.remote_job_id),
        }

    def attempt_row(self, at: Attempt) -> dict[str, Any]:
        return {
            "attempt_id": at.attempt_id,
            "operation_id": at.operation_id,
            "kind": at.kind.value,
            "fence": at.fence,
            "actor": at.actor,
            "started_at": self.t_out(at.started_at),
            "request": dump(at.request),
            "finished_at": self.t_out(at.finished_at),
            "outcome": storable(at.outcome),
            "http_status": at.http_status,
            "provider_request_id": storable(at.provider_request_id),
            "detail": dump(at.detail),
        }

    def attempt_outcome_row(self, at: Attempt) -> dict[str, Any]:
        """The columns a finished attempt adds to its recorded intent."""
        return {
            "attempt_id": at.attempt_id,
            "finished_at": self.t_out(at.finished_at),
            "outcome": storable(at.outcome),
            "http_status": at.http_status,
            "provider_request_id": storable(at.provider_request_id),
            "detail": dump(at.detail),
        }

    def observation_row(self, ob: Observation) -> dict[str, Any]:
        return {
            "operation_id": ob.operation_id,
            "source": ob.source,
            "observed_at": self.t_out(ob.observed_at),
            "remote_state": storable(ob.remote_state),
            "remote_status": ob.remote_status.value,
            "provider_updated_at": storable(ob.provider_updated_at),
            "progress": dump(ob.progress),
            "ref": storable(ob.ref),
            "event_id": storable(ob.event_id),
            "last_seen_at": self.t_out(ob.last_seen_at),
            "seen_count": ob.seen_count,
            "last_request_id": storable(ob.request_id),
            "last_progress": dump(ob.last_progress),
            "usage": dump(ob.usage),
            # Only a status read opens a run that later reads may fold into.
            "closed_at": self.t_out(
                ob.closed_at if ob.source == "status" else ob.closed_at or ob.observed_at
            ),
        }

    def fold_row(self, ob: Observation) -> dict[str, Any]:
        """What a read that sees the open run's remote state again changes in that run."""
        return {
            "operation_id": ob.operation_id,
            "source": ob.source,
            "remote_state": storable(ob.remote_state),
            "remote_status": ob.remote_status.value,
            "last_seen_at": self.t_out(ob.observed_at),
            "last_request_id": storable(ob.request_id),
            "last_progress": dump(ob.progress),
        }


def run_closed(ob: Observation, closed_at: datetime) -> AuditEntry:
    """The audit entry that seals an observation run: its final values, so the hash chain
    covers every read it folded even though the row itself was updated in place."""
    return AuditEntry(
        at=closed_at,
        operation_id=ob.operation_id,
        kind="observation.run",
        actor="ledger",
        data={
            "source": ob.source,
            "remote_state": ob.remote_state,
            "remote_status": ob.remote_status.value,
            "provider_updated_at": ob.provider_updated_at,
            "first_seen": ob.observed_at.isoformat(),
            "last_seen": ob.seen_last.isoformat(),
            "count": ob.seen_count,
            "first_ref": ob.ref,
            "last_request_id": ob.request_id,
            "first_progress": ob.progress,
            "last_progress": ob.last_progress,
            "closed_at": closed_at.isoformat(),
        },
    )
