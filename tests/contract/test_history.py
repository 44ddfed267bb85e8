"""Reading back what was appended: history, attempts and observations, in order."""

from __future__ import annotations

from dataclasses import replace

from jobtrail.core.model import Operation
from jobtrail.core.states import State
from jobtrail.store import Change, Store
from jobtrail.store.changes import Verdict

from contract_records import at, attempt, entry, finished, observation, operation, step


async def _commit(store: Store, change: Change) -> Operation:
    (result,) = await store.commit([change])
    assert result.verdict is Verdict.OK and result.operation is not None
    return result.operation


async def test_history_is_in_append_order_per_operation(store: Store) -> None:
    """history lists one operation's transitions in the order they were committed, numbered
    increasingly, and none of another operation's."""
    op, other = operation(1), operation(2)
    for created in (op, other):
        await store.create_operation(created, [entry(created, "operation.submitted")])
    path = [State.CREATE_UNKNOWN, State.RECONCILIATION, State.ACCEPTED, State.OBSERVING]
    for n, state in enumerate(path):
        op = await _commit(store, step(op, at(10 + n), to=state))
        other = await _commit(store, step(other, at(10 + n), to=State.FAILED if n == 0 else None))
    history = await store.history(op.operation_id)
    assert [t.to_state for t in history] == path
    assert [t.from_state for t in history] == [State.CREATE_PENDING, *path[:-1]]
    seqs = [t.seq for t in history]
    assert all(s is not None for s in seqs) and seqs == sorted(seqs)  # type: ignore[type-var]
    assert [t.at for t in history] == [at(10 + n) for n in range(4)]
    assert len(await store.history(other.operation_id)) == 1


async def test_attempts_in_start_order(store: Store) -> None:
    """attempts lists calls by start time (ties in the order recorded), with outcomes
    filled in once finished."""
    op = operation(1)
    await store.create_operation(op, [])
    late, early, tied = attempt(op, at(20), 1), attempt(op, at(5), 2), attempt(op, at(20), 3)
    for att in (late, early, tied):
        op = await _commit(store, Change(operation=op, attempt_started=att))
    op = await _commit(store, Change(operation=op, attempt_finished=finished(late, at(21), 503)))
    assert await store.attempts(op.operation_id) == [early, finished(late, at(21), 503), tied]


async def test_an_outcome_stored_as_a_class_name_reads_as_its_word(store: Store) -> None:
    """Ledgers written before outcomes declared their words hold "Observed", "Ambiguous"...:
    read back, those are the words ("observed", "ambiguous"); a stored word stays as it is."""
    op = operation(1)
    await store.create_operation(op, [])
    old, new = attempt(op, at(5), 1), attempt(op, at(6), 2)
    for att, outcome in ((old, "Ambiguous"), (new, "observed")):
        op = await _commit(store, Change(operation=op, attempt_started=att))
        done = replace(finished(att, at(7)), outcome=outcome)
        op = await _commit(store, Change(operation=op, attempt_finished=done))
    assert [a.outcome for a in await store.attempts(op.operation_id)] == ["ambiguous", "observed"]


async def test_observations_in_append_order(store: Store) -> None:
    """observations lists what was observed in the order recorded, exactly as given, but
    that a later fact closes the open status run (a webhook's row is stored closed)."""
    op = operation(1)
    await store.create_operation(op, [])
    seen = [observation(op, at(30), state="QUEUED"), observation(op, at(10), "ev_9")]
    op = await _commit(store, replace(step(op, at(30)), observations=seen[:1]))
    op = await _commit(store, replace(step(op, at(31)), observations=seen[1:]))
    assert await store.observations(op.operation_id) == [
        replace(seen[0], closed_at=at(31)),
        replace(seen[1], closed_at=at(10)),
    ]
    assert await store.observations("op_missing") == []
