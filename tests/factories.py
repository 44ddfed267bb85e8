"""Building records for the pure core's unit tests (no store, no network)."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from jobtrail.core.apply import Applied, Schedule, apply
from jobtrail.core.model import Capabilities, Idempotency, JobRequest, Operation, ResultMode
from jobtrail.core.outcomes import Outcome

T0 = datetime(2025, 3, 8, 14, 22, 11, tzinfo=UTC)

FULL = Capabilities(
    idempotency=Idempotency.HEADER,
    same_token_retry=True,
    list_by_reference=True,
    cancel=True,
    result=ResultMode.ENDPOINT,
    absent_after=60.0,  # a lookup miss proves absence a minute after the last create
)


def make_op(**changes: Any) -> Operation:
    op = Operation(
        operation_id="op_01J7Q5X4D4PA3D",
        key="op_01J7Q5X4D4PA3D",
        provider="reports",
        provider_config={},
        capabilities=FULL,
        request=JobRequest(method="POST", target="reports:POST /v1/reports", body={"a": 1}),
        fingerprint="sha256:00",
        idempotency_token="idem_5b5c76c7",
        trace_id="0af7651916cd43dd8448eb211c80319c",
        actor="agent-7",
        authorized_by="alice",
        reason="February report",
        created_at=T0,
        create_deadline=T0 + timedelta(minutes=2),
        result_deadline=T0 + timedelta(hours=1),
        cancel_timeout=timedelta(minutes=10),
        next_poll_at=T0,
    )
    return replace(op, **changes)


def schedule(seed: int = 0) -> Schedule:
    return Schedule(rand=random.Random(seed))


def step(op: Operation, outcome: Outcome, at: datetime | None = None, actor: str = "w1") -> Applied:
    return apply(op, outcome, at or op.next_poll_at or T0, actor=actor, schedule=schedule())
