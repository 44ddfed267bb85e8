"""Rows -> records (the codec's reading half); `codec.Codec` adds the writing half."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from jobtrail.core.model import (
    Attempt,
    AttemptKind,
    CancelIntent,
    Capabilities,
    Idempotency,
    JobRequest,
    Observation,
    Operation,
    ProviderKind,
    ResultMode,
    Transition,
    evolve,
)
from jobtrail.core.outcomes import stored_word
from jobtrail.core.states import Evidence, RemoteStatus, State
from jobtrail.store.leases import CLOCK_FIELDS, Lease
from jobtrail.store.text import column as _column
from jobtrail.store.text import load, load_shared, result_summary

TimeIn = Callable[[Any], datetime | None]


class Decoder:
    def __init__(self, time_in: TimeIn) -> None:
        self.t_in = time_in

    def _t(self, value: Any) -> datetime:
        when = self.t_in(value)
        assert when is not None
        return when

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

    def lease(self, row: Any) -> Lease:
        return Lease(
            operation_id=row["operation_id"],
            fence=row["fence"],
            owner=row["owner"],
            acquired_at=self._t(row["acquired_at"]),
            expires_at=self._t(row["expires_at"]),
            released_at=self.t_in(row["released_at"]),
            **{name: row[name] for name in CLOCK_FIELDS},
        )

    def capabilities(self, text: Any) -> Capabilities:
        caps = load_shared(text)
        return Capabilities(
            **caps
            | {
                "idempotency": Idempotency(caps["idempotency"]),
                "result": ResultMode(caps["result"]),
            }
        )

    def operation(self, row: Any) -> Operation:
        request = load(row["request"])
        return Operation(
            operation_id=row["operation_id"],
            key=row["op_key"],
            provider=row["provider"],
            provider_config=load_shared(row["provider_config"]),
            # Archives written before 0007 have neither: their operations were all HTTP.
            provider_kind=ProviderKind(_column(row, "provider_kind") or "http"),
            provider_version=_column(row, "provider_version"),
            capabilities=self.capabilities(row["capabilities"]),
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
