"""Observation runs: unchanged status reads fold into one row; anything else closes the run,
and a closed run is sealed in the audit log and frozen by the database."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from jobtrail.core.audit import digest
from jobtrail.core.model import Attempt, Observation, Operation
from jobtrail.core.seals import run_values
from jobtrail.core.states import RemoteStatus, State
from jobtrail.store import Store
from jobtrail.store.changes import Change, Verdict

from contract_records import (
    LEASE,
    SHORT,
    at,
    attempt,
    entry,
    finished,
    observation,
    operation,
    outlive,
    step,
)
from stores import RAW_ERRORS, LedgerDb


def _seen(op: Operation, second: float, state: str = "RUNNING", n: int = 0) -> Observation:
    """What one status read at `second` saw, as the core records it."""
    seen = observation(op, at(second), state=state)
    return replace(
        seen,
        request_id=f"preq_{n}",
        last_seen_at=at(second),
        progress={"percent": n},
        last_progress={"percent": n},
    )


def _read(op: Operation, second: float, n: int, ob: Observation | None) -> Change:
    """An owner's safe status read: its attempt recorded with its outcome, no intent before,
    no audit entry of its own."""
    done: Attempt = finished(attempt(op, at(second), n), at(second))
    change = step(op, at(second), fence=op.fence)
    return replace(change, observations=[ob] if ob else [], safe_read=done, audit=[])


async def _leased(store: Store, lease_for: timedelta = LEASE) -> Operation:
    op = operation(1, next_poll_at=at(0), state=State.OBSERVING, remote_job_id="j1")
    await store.create_operation(op, [])
    (claim,) = await store.claim_due("worker:a", at(1), 1, lease_for)
    return claim.operation


async def _commit(store: Store, change: Change) -> Operation:
    (result,) = await store.commit([change])
    assert result.verdict is Verdict.OK and result.operation is not None
    return result.operation


async def _rows(store: Store, op: Operation) -> tuple[int, int, int]:
    oid = op.operation_id
    return (
        len(await store.observations(oid)),
        len(await store.attempts(oid)),
        len(await store.audit_rows(oid)),
    )


def _runs(rows: list[Any]) -> list[dict[str, Any]]:
    return [json.loads(r.entry)["data"] for r in rows if '"observation.run"' in r.entry]


async def test_unchanged_reads_fold_into_the_open_run(store: Store) -> None:
    """Reads that see the open run's remote state again add no row: the run's last seen,
    count, last request id and last progress follow them; only the first read's attempt is
    stored, and no audit entry is written."""
    op = await _leased(store)
    op = await _commit(store, _read(op, 2, 0, _seen(op, 2, n=0)))
    before = await _rows(store, op)
    for n in range(1, 6):
        op = await _commit(store, _read(op, 2 + n, n, _seen(op, 2 + n, n=n)))
    assert await _rows(store, op) == before == (1, 1, 0)
    (run,) = await store.observations(op.operation_id)
    assert (run.observed_at, run.last_seen_at, run.seen_count) == (at(2), at(7), 6)
    assert (run.request_id, run.last_progress, run.progress) == (
        "preq_5",
        {"percent": 5},
        {"percent": 0},
    )
    assert run.closed_at is None


async def test_a_changed_state_closes_the_run_and_seals_it(store: Store) -> None:
    """A read of another remote state starts a new run (with its attempt) and closes the
    old one, whose final values are appended to the audit log."""
    op = await _leased(store)
    op = await _commit(store, _read(op, 2, 0, _seen(op, 2)))
    op = await _commit(store, _read(op, 3, 1, _seen(op, 3, n=1)))
    op = await _commit(store, _read(op, 4, 2, _seen(op, 4, state="QUEUED", n=2)))
    first, second = await store.observations(op.operation_id)
    assert (first.seen_count, first.closed_at, second.seen_count, second.closed_at) == (
        2,
        at(4),
        1,
        None,
    )
    assert len(await store.attempts(op.operation_id)) == 2
    (sealed,) = _runs(await store.audit_rows(op.operation_id))
    # The seal binds the run's final values by hash (migration 0017): these, as the row holds
    # them once closed.
    final = run_values(first, at(4))
    assert final["remote_state"] == "RUNNING" and final["last_seen"] == at(3).isoformat()
    assert final["last_request_id"] == "preq_1" and final["last_progress"] == {"percent": 1}
    assert sealed == {
        "source": first.source,
        "first_ref": first.ref,
        "count": 2,
        "run_sha256": digest(final),
    }


async def test_an_error_or_a_webhook_starts_a_new_run(store: Store) -> None:
    """A failed read (an attempt, no observation) and a webhook each close the open run, so
    the next read of the same state opens a new one."""
    op = await _leased(store)
    op = await _commit(store, _read(op, 2, 0, _seen(op, 2)))
    op = await _commit(store, _read(op, 3, 1, None))  # the read failed: no observation
    op = await _commit(store, _read(op, 4, 2, _seen(op, 4)))
    hook = replace(
        step(op, at(5)), observations=[observation(op, at(5), "ev_1")], audit=[], owner_fence=None
    )
    op = await _commit(store, hook)
    op = await _commit(store, _read(op, 6, 3, _seen(op, 6)))
    runs = await store.observations(op.operation_id)
    assert [(r.source, r.seen_count, r.closed_at) for r in runs] == [
        ("status", 1, at(3)),
        ("status", 1, at(5)),
        ("webhook", 1, at(5)),
        ("status", 1, None),
    ]
    assert len(await store.attempts(op.operation_id)) == 4
    assert len(_runs(await store.audit_rows(op.operation_id))) == 2


async def test_ending_automation_closes_the_run_in_the_same_commit(store: Store) -> None:
    """A read that ends automation (a terminal remote state) stores its run already closed
    and sealed, so no open run outlives the operation's automation."""
    op = await _leased(store)
    op = await _commit(store, _read(op, 2, 0, _seen(op, 2)))
    last = _read(op, 3, 1, replace(_seen(op, 3, "FAILED"), remote_status=RemoteStatus.FAILED))
    op = await _commit(store, replace(last, operation=replace(last.operation, state=State.FAILED)))
    runs = await store.observations(op.operation_id)
    assert [r.closed_at for r in runs] == [at(3), at(3)]
    assert [r.remote_state for r in runs] == ["RUNNING", "FAILED"]
    sealed = [s["run_sha256"] for s in _runs(await store.audit_rows(op.operation_id))]
    assert sealed == [digest(run_values(r, at(3))) for r in runs]  # each sealed, by hash


async def test_a_fenced_out_safe_read_leaves_nothing(store: Store) -> None:
    """A read by an owner whose lease was taken over writes no attempt, observation or
    audit entry: it had no effect, and the new owner reads again."""
    op = await _leased(store, SHORT)
    await outlive()
    await store.claim_due("worker:b", at(1) + SHORT, 1, LEASE)
    change = replace(_read(op, 40, 0, _seen(op, 40)), audit=[entry(op, "read", at(40))])
    (result,) = await store.commit([change])
    assert result.verdict is Verdict.FENCED_OUT
    assert await _rows(store, op) == (0, 0, 0)


REWRITES = [
    "UPDATE observations SET remote_state = 'SUCCEEDED'",
    "UPDATE observations SET seen_count = seen_count - 1",
    "UPDATE observations SET observed_at = last_seen_at, ref = 'x'",
]


@pytest.mark.parametrize("statement", REWRITES)
async def test_the_open_run_changes_only_its_last_seen_columns(
    ledger_db: LedgerDb, statement: str
) -> None:
    """A plain connection can neither rewrite what an open run first saw nor lower its
    count."""
    async with ledger_db.opened() as store:
        op = await _leased(store)
        op = await _commit(store, _read(op, 2, 0, _seen(op, 2)))
        before = await store.observations(op.operation_id)
        with pytest.raises(RAW_ERRORS, match="append-only"):
            await ledger_db.raw_execute(statement)
        assert await store.observations(op.operation_id) == before


async def test_a_closed_run_is_frozen(ledger_db: LedgerDb) -> None:
    """Once closed (and sealed in the audit log), a run's count cannot change either."""
    async with ledger_db.opened() as store:
        op = await _leased(store)
        op = await _commit(store, _read(op, 2, 0, _seen(op, 2)))
        op = await _commit(store, _read(op, 3, 1, _seen(op, 3, "QUEUED")))
        with pytest.raises(RAW_ERRORS, match="append-only"):
            await ledger_db.raw_execute(
                "UPDATE observations SET seen_count = seen_count + 1 WHERE closed_at IS NOT NULL"
            )
        await ledger_db.raw_execute(  # the open run may still move on
            "UPDATE observations SET seen_count = seen_count + 1 WHERE closed_at IS NULL"
        )
        assert [r.seen_count for r in await store.observations(op.operation_id)] == [1, 2]


async def test_the_same_owner_claiming_again_adds_no_lease_row(store: Store) -> None:
    """Lease history has a row per tenure: an owner re-claiming what it released moves its
    row to the new fence; another owner taking over adds a row."""
    op = await _leased(store)
    for n in range(3):
        assert await store.release(op.operation_id, op.fence, at(2 + n), at(2 + n))
        (claim,) = await store.claim_due("worker:a", at(2 + n), 1, LEASE)
        op = claim.operation
    (lease,) = await store.leases(op.operation_id)
    assert (lease.fence, lease.owner, lease.acquired_at) == (op.fence, "worker:a", at(1))
    assert (lease.expires_at, lease.released_at) == (at(4) + LEASE, None)
    assert await store.release(op.operation_id, op.fence, at(9), at(9))
    (other,) = await store.claim_due("worker:b", at(9), 1, LEASE)
    first, second = await store.leases(op.operation_id)
    assert (first.owner, first.released_at, second.owner) == ("worker:a", at(9), "worker:b")
    assert second.fence == other.operation.fence == op.fence + 1


async def test_observations_of_an_older_ledger_become_closed_runs(
    ledger_db: LedgerDb, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migration 0003 upgrades a ledger holding observations: each becomes a closed run of
    one read, and the next status read opens a run of its own."""
    import jobtrail.store.postgres as pg_module
    import jobtrail.store.sqlite as sqlite_module
    from jobtrail.store.migrations import migrations

    def before_0003(dialect: str) -> list[tuple[int, str]]:
        return [(version, script) for version, script in migrations(dialect) if version < 3]

    for module in (sqlite_module, pg_module):
        monkeypatch.setattr(module, "migrations", before_0003)
    op = operation(1, next_poll_at=at(0), state=State.OBSERVING, remote_job_id="j1")
    async with ledger_db.opened():
        pass  # the schema as it was before 0003
    # Today's codec writes columns that later migrations add: insert the row as a ledger of
    # that age held it, with only the columns it had.
    await ledger_db.raw_execute(_old_operation_insert(op))
    await ledger_db.raw_execute(
        "INSERT INTO observations (operation_id, source, observed_at, remote_state, "
        f"remote_status) VALUES ('{op.operation_id}', 'status', '2025-03-01T12:00:00.000000Z', "
        "'RUNNING', 'running')"
    )
    monkeypatch.undo()
    async with ledger_db.opened() as store:
        (old,) = await store.observations(op.operation_id)
        assert (old.seen_count, old.closed_at, old.last_seen_at) == (1, at(0), at(0))
        (claim,) = await store.claim_due("worker:a", at(1), 1, LEASE)
        await _commit(store, _read(claim.operation, 2, 0, _seen(op, 2)))
        assert [r.closed_at for r in await store.observations(op.operation_id)] == [at(0), None]


def _old_operation_insert(op: Operation) -> str:
    """An INSERT of `op` holding only the columns a ledger had before migration 0003."""
    from jobtrail.store.sqlite import CODEC

    row = CODEC.operation_row(op)
    kept = {k: v for k, v in row.items() if k in _COLUMNS_BEFORE_0003}

    def literal(value: Any) -> str:
        if value is None:
            return "NULL"
        if isinstance(value, int | float):
            return str(int(value) if isinstance(value, bool) else value)
        return "'" + str(value).replace("'", "''") + "'"

    values = ", ".join(literal(v) for v in kept.values())
    return f"INSERT INTO operations ({', '.join(kept)}) VALUES ({values})"


_COLUMNS_BEFORE_0003 = frozenset(
    [
        "operation_id",
        "op_key",
        "provider",
        "provider_config",
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
        "result_deadline",
        "state",
        "remote_job_id",
        "remote_state",
        "remote_status",
        "progress",
        "status_url",
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
        "fence",
        "lease_owner",
        "lease_expires_at",
        "version",
        "updated_at",
        "poll_requested",
    ]
)
