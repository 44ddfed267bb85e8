"""Which changes must reach the disk before their writer goes on (store.changes.must_sync)."""

from __future__ import annotations

from dataclasses import replace

from jobtrail.core.model import AttemptKind
from jobtrail.core.states import State
from jobtrail.store.changes import must_sync

from contract_records import at, attempt, finished, observation, operation, step


def test_a_safe_read_that_moves_no_state_need_not_sync() -> None:
    """A status read recorded with its outcome and no transition may be lost to a power cut
    (the next owner reads again), so its commit need not wait for the disk."""
    op = operation(1, state=State.OBSERVING)
    read = replace(
        step(op, at(2), fence=1),
        observations=[observation(op, at(2))],
        safe_read=finished(attempt(op, at(2)), at(2)),
    )
    assert not must_sync(read)


def test_intents_transitions_and_other_writes_must_sync() -> None:
    """An intent, a transition (a read that changes the state included), an outcome of a
    call with an effect and any write by someone else are synced before anyone goes on."""
    op = operation(1, state=State.OBSERVING)
    read = finished(attempt(op, at(2)), at(2))
    create = attempt(op, at(2), kind=AttemptKind.CREATE)
    assert must_sync(replace(step(op, at(2), fence=1), attempt_started=create))
    assert must_sync(replace(step(op, at(2), fence=1, to=State.FAILED), safe_read=read))
    assert must_sync(replace(step(op, at(2), fence=1), attempt_finished=finished(create, at(3))))
    assert must_sync(step(op, at(2)))
