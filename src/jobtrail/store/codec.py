"""Records <-> rows, shared by both dialects. A dialect supplies how it stores times."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import asdict
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from jobtrail.core.audit import AuditEntry
from jobtrail.core.model import (
    Attempt,
    AttemptKind,
    CancelIntent,
    Capabilities,
    Idempotency,
    ItemCounts,
    JobRequest,
    Observation,
    Operation,
    ProviderKind,
    ResultMode,
    ResultSummary,
    Transition,
    evolve,
)
from jobtrail.core.outcomes import stored_word
from jobtrail.core.seals import run_seal
from jobtrail.core.states import Evidence, RemoteStatus, State

TimeOut = Callable[[datetime | None], Any]
TimeIn = Callable[[Any], datetime | None]

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


@lru_cache(maxsize=64)
def config_key(document: str) -> str:
    return "sha256:" + hashlib.sha256(document.encode()).hexdigest()


def keyed_config(row: dict[str, Any]) -> tuple[str, str]:
    """An operation row about to be inserted, its provider document swapped for the key:
    returns (key, document), which the same transaction stores in provider_configs."""
    document = row["provider_config"]
    row["provider_config"] = key = config_key(document)
    return key, document


# Stored JSON needs to be deterministic and readable, not RFC 8785 (fingerprints use that):
# the C encoder with sorted keys is several times faster on this hot path.
_ENCODE = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
).encode


def storable(value: Any) -> Any:
    """A text as a text column holds it: PostgreSQL text cannot hold U+0000, so both stores
    keep a NUL in a text field (a provider's state word, id, request id, an error cause) as
    U+FFFD, the replacement character. JSON documents keep it exactly: their text escapes it
    as \\u0000. Anything but a text is returned as it is; applying it twice changes nothing."""
    if type(value) is str and "\x00" in value:
        return value.replace("\x00", "\ufffd")
    return value


def dump(value: Any) -> str | None:
    return None if value is None else _ENCODE(value)


def load(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _fields_of(record: Any) -> dict[str, Any]:
    """A flat record's fields as a dict: what asdict gives, without its deep copy."""
    return dict(record.__dict__)


class LastOne:
    """`fn` that remembers its result for the last argument it saw (by identity). A step
    stamps many columns with one `now` and a batch submits under one provider file, so the
    last one is all worth remembering. The pair is swapped as one tuple: threads may share
    an instance."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self._fn = fn
        self._last: tuple[Any, Any] = (object(), None)

    def __call__(self, value: Any) -> Any:
        last = self._last
        if last[0] is value:
            return last[1]
        result = self._fn(value)
        self._last = (value, result)
        return result


# The provider file is shared by every operation submitted under it.
_shared_text = LastOne(dump)


@lru_cache(maxsize=64)
def load_shared(text: str) -> Any:
    """Documents that many operations share (provider file, capabilities), decoded once.
    The result is shared: callers must treat it as read-only, as they treat all records."""
    return json.loads(text)


class Codec:
    def __init__(self, time_out: TimeOut, time_in: TimeIn) -> None:
        self.t_out, self.t_in = time_out, time_in
        self._mutable = self._mutable_encoders()

    def _t(self, value: Any) -> datetime:
        when = self.t_in(value)
        assert when is not None
        return when

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

    def after_update(self, op: Operation, row: Any) -> Operation:
        """The record an update of `op` stored, from the columns the store itself decides
        (version, poll time, lease): everything else is what `op` says."""
        return evolve(
            op,
            version=row["version"],
            next_poll_at=self.t_in(row["next_poll_at"]),
            fence=row["fence"],
            lease_owner=row["lease_owner"],
            lease_expires_at=self.t_in(row["lease_expires_at"]),
        )

    def _intent(self, intent: CancelIntent | None) -> dict[str, Any] | None:
        if intent is None:
            return None
        doc = asdict(intent)
        doc["requested_at"] = intent.requested_at.isoformat()
        return doc

    def operation(self, row: Any) -> Operation:
        caps = load_shared(row["capabilities"])
        request = load(row["request"])
        return Operation(
            operation_id=row["operation_id"],
            key=row["op_key"],
            provider=row["provider"],
            provider_config=load_shared(row["provider_config"]),
            # Archives written before 0007 have neither: their operations were all HTTP.
            provider_kind=ProviderKind(_column(row, "provider_kind") or "http"),
            provider_version=_column(row, "provider_version"),
            capabilities=Capabilities(
                **caps
                | {
                    "idempotency": Idempotency(caps["idempotency"]),
                    "result": ResultMode(caps["result"]),
                }
            ),
            request=JobRequest(**request),
            fingerprint=row["fingerprint"],
            idempotency_token=row["idempotency_token"],
            trace_id=row["trace_id"],
            actor=row["actor"],
            authorized_by=row["authorized_by"],
            reason=row["reason"],
            created_at=self._t(row["created_at"]),
            create_deadline=self._t(row["create_deadline"]),
            cancel_timeout=timedelta(seconds=float(row["cancel_timeout_s"])),
            **self._changing(row),
        )

    def _changing(self, row: Any) -> dict[str, Any]:
        """The fields of the mutable and lease columns."""
        t = self.t_in
        intent = load(row["cancel_intent"])
        result = load(row["result"])
        return {
            "result_deadline": self._t(row["result_deadline"]),
            "state": State(row["state"]),
            "remote_job_id": row["remote_job_id"],
            "remote_state": row["remote_state"],
            "remote_status": RemoteStatus(row["remote_status"]) if row["remote_status"] else None,
            "progress": load(row["progress"]),
            "status_url": row["status_url"],
            "status_via": row["status_via"],
            "candidate_job_id": row["candidate_job_id"],
            "conflicting_job_ids": tuple(load(row["conflicting_job_ids"]) or ()),
            "next_poll_at": t(row["next_poll_at"]),
            "poll_count": row["poll_count"],
            "create_attempts": row["create_attempts"],
            "inflight_attempt": row["inflight_attempt"],
            "cancel_intent": (
                CancelIntent(
                    **intent | {"requested_at": datetime.fromisoformat(intent["requested_at"])}
                )
                if intent
                else None
            ),
            "cancel_deadline": t(row["cancel_deadline"]),
            "cancel_sent": bool(row["cancel_sent"]),
            "inline_result": row["inline_result"],
            "result": result_summary(result) if result else None,
            "fence": row["fence"],
            "lease_owner": row["lease_owner"],
            "lease_expires_at": t(row["lease_expires_at"]),
            "version": row["version"],
            "updated_at": t(row["updated_at"]),
            "refused_reads": row["refused_reads"],
            "refused_since": t(row["refused_since"]),
            "create_sent_at": t(_column(row, "create_sent_at")),
            "usage": load(_column(row, "usage")),  # 0015: work done and billed
        }

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

    def transition(self, row: Any) -> Transition:
        return Transition(
            seq=row["seq"],
            operation_id=row["operation_id"],
            at=self._t(row["at"]),
            actor=row["actor"],
            from_state=State(row["from_state"]),
            to_state=State(row["to_state"]),
            evidence=Evidence(row["evidence"]),
            cause=row["cause"],
            remote_job_id=row["remote_job_id"],
        )

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

    def attempt(self, row: Any) -> Attempt:
        return Attempt(
            attempt_id=row["attempt_id"],
            operation_id=row["operation_id"],
            kind=AttemptKind(row["kind"]),
            fence=row["fence"],
            actor=row["actor"],
            started_at=self._t(row["started_at"]),
            request=load(row["request"]),
            finished_at=self.t_in(row["finished_at"]),
            outcome=stored_word(row["outcome"]),
            http_status=row["http_status"],
            provider_request_id=row["provider_request_id"],
            detail=load(row["detail"]),
        )

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

    def observation(self, row: Any) -> Observation:
        return Observation(
            operation_id=row["operation_id"],
            source=row["source"],
            observed_at=self._t(row["observed_at"]),
            remote_state=row["remote_state"],
            remote_status=RemoteStatus(row["remote_status"]),
            provider_updated_at=row["provider_updated_at"],
            progress=load(row["progress"]),
            ref=row["ref"],
            event_id=row["event_id"],
            request_id=row["last_request_id"],
            last_seen_at=self.t_in(row["last_seen_at"]),
            seen_count=row["seen_count"],
            last_progress=load(row["last_progress"]),
            closed_at=self.t_in(row["closed_at"]),
            usage=load(_column(row, "usage")),
        )

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


def _column(row: Any, name: str) -> Any:
    """A column that older rows (an archive's records) may lack."""
    try:
        return row[name]
    except (KeyError, IndexError):
        return None


def run_closed(ob: Observation, closed_at: datetime) -> AuditEntry:
    """The audit entry that seals an observation run, so the hash chain covers every read it
    folded even though the row itself was updated in place (what it holds: core.seals)."""
    return AuditEntry(
        at=closed_at,
        operation_id=ob.operation_id,
        kind="observation.run",
        actor="ledger",
        data=run_seal(ob, closed_at),
    )


def result_doc(summary: ResultSummary) -> dict[str, Any]:
    return asdict(summary)


def result_summary(doc: Mapping[str, Any]) -> ResultSummary:
    items = doc.get("items")
    return ResultSummary(
        **{k: v for k, v in doc.items() if k not in ("items", "checks", "problems")},
        items=ItemCounts(**items | {"failed_refs": tuple(items["failed_refs"])}) if items else None,
        checks=tuple(doc.get("checks", ())),
        problems=tuple(doc.get("problems", ())),
    )
