"""Operations driven through a real Ledger on any store, without a network: each call's
outcome is given as the provider would have answered (for the retention and tampering tests).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from jobtrail.clock import VirtualClock
from jobtrail.core import outcomes as o
from jobtrail.core.model import AttemptKind, Operation, ResultSummary
from jobtrail.core.states import RemoteStatus
from jobtrail.ledger import Ledger
from jobtrail.providers.file.config import ProviderSpec, parse_provider
from jobtrail.store import Store

from harness import simulator_doc
from stores import LedgerDb

WORKER = "worker:a"
SPEC: ProviderSpec = parse_provider(simulator_doc("http://127.0.0.1:9"))


def ledger_at(store: Store, start: datetime | None = None) -> tuple[Ledger, VirtualClock]:
    clock = VirtualClock(start or datetime(2025, 3, 1, 12, 0, tzinfo=UTC))
    return Ledger(store, clock=clock), clock


async def _call(
    ledger: Ledger, op: Operation, kind: AttemptKind, outcome: o.CallOutcome
) -> Operation:
    # Under a lease when the operation is due (as a worker would), so leases are owned too.
    claims = await ledger.store.claim_due(
        WORKER, ledger.now(), 1, timedelta(seconds=30), only=op.operation_id
    )
    if claims:
        op = replace(claims[0].operation, next_poll_at=claims[0].was_due)
    op, attempt = await ledger.begin_call(op, kind, {"method": "GET"}, WORKER)
    return await ledger.finish_call(op, attempt, outcome, detail={"n": 1}, actor=WORKER)


async def submitted(ledger: Ledger, n: int) -> Operation:
    return await ledger.submit(SPEC, {"n": n}, key=f"key-{n}", actor="agent:test")


async def observing(ledger: Ledger, n: int) -> Operation:
    """Created, accepted as job_<n>, still running remotely."""
    op = await submitted(ledger, n)
    running = o.Accepted(
        job_id=f"job_{n}", remote_state="RUNNING", remote_status=RemoteStatus.RUNNING
    )
    return await _call(ledger, op, AttemptKind.CREATE, running)


async def succeeded(ledger: Ledger, n: int) -> Operation:
    """Created, observed done, result collected and valid."""
    op = await observing(ledger, n)
    done = o.Observed(remote_state="DONE", remote_status=RemoteStatus.SUCCEEDED)
    op = await _call(ledger, op, AttemptKind.STATUS, done)
    summary = ResultSummary(valid=True, content_type="text/csv", sha256="ab" * 32, size=3)
    return await _call(ledger, op, AttemptKind.RESULT, o.ResultChecked(summary=summary))


async def failed(ledger: Ledger, n: int) -> Operation:
    """Refused at create."""
    op = await submitted(ledger, n)
    refused = o.Rejected(reason="bad account", http_status=400)
    return await _call(ledger, op, AttemptKind.CREATE, refused)


def later(clock: VirtualClock, **delta: Any) -> datetime:
    clock.advance(timedelta(**delta).total_seconds())
    return clock.now()


# Raw tampering, as someone with a database client would do it: the append-only triggers are
# dropped (SQLite) or disabled (PostgreSQL) first, then the statements run.
_GUARDS = {
    "audit_log": ("audit_no_update", "audit_no_delete"),
    "transitions": ("transitions_no_update", "transitions_no_delete"),
    "attempts": ("attempts_no_delete",),
    "observations": ("observations_no_update", "observations_no_delete"),
}


async def tamper(db: LedgerDb, table: str, *statements: str) -> None:
    if db.kind == "sqlite":
        unguard = [f"DROP TRIGGER IF EXISTS {name}" for name in _GUARDS.get(table, ())]
    else:
        unguard = [f"ALTER TABLE {table} DISABLE TRIGGER USER"]
    for statement in (*unguard, *statements):
        await db.raw_execute(statement)
