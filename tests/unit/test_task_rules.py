"""The task rules of core/tasks.py: which of the extension's five words an operation's state
shows, when a completed task is a tool error, how often a client is asked to poll, and what
a task id looks like."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from jobtrail.core.states import State
from jobtrail.core.tasks import (
    POLL_CAP,
    POLL_FLOOR,
    POLL_LEASED,
    TaskHandle,
    TaskStatus,
    ended_in_error,
    new_task_id,
    poll_interval,
    task_hash,
    task_status,
)

from factories import make_op

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
WORKING = [s for s in State if not s.ends_automation]


@pytest.mark.parametrize("state", WORKING)
def test_every_state_jobtrail_still_drives_is_working(state: State) -> None:
    """Pending, unknown, reconciling, running, cancelling and collecting are all `working`."""
    assert task_status(state) is TaskStatus.WORKING


def test_ended_states_map_onto_the_extensions_words() -> None:
    """succeeded and every failure complete (failures as tool errors); cancelled only from the
    provider's confirmation; what a person must decide is input_required; never `failed`."""
    assert task_status(State.SUCCEEDED) is TaskStatus.COMPLETED
    assert not ended_in_error(State.SUCCEEDED)
    for state in (State.FAILED, State.RESULT_UNAVAILABLE, State.RESULT_VALIDATION_FAILED):
        assert task_status(state) is TaskStatus.COMPLETED and ended_in_error(state)
    assert task_status(State.CANCELLED) is TaskStatus.CANCELLED
    assert task_status(State.CANCEL_REQUESTED) is TaskStatus.WORKING
    for state in (State.NEEDS_HUMAN, State.RESULT_TIMED_OUT, State.CANCELLATION_UNCONFIRMED):
        assert task_status(state) is TaskStatus.INPUT_REQUIRED
    assert all(task_status(s) is not TaskStatus.FAILED for s in State)


def test_poll_interval_follows_the_stored_next_poll_time() -> None:
    """Until the next poll, within the floor and the cap; a second while leased; none once
    ended."""
    op = make_op(state=State.OBSERVING)
    at = replace(op, next_poll_at=NOW + timedelta(seconds=42), lease_owner=None)
    assert poll_interval(at, NOW) == timedelta(seconds=42)
    assert poll_interval(replace(at, next_poll_at=NOW - timedelta(seconds=5)), NOW) == POLL_FLOOR
    assert poll_interval(replace(at, next_poll_at=NOW + timedelta(days=3)), NOW) == POLL_CAP
    assert poll_interval(replace(at, lease_owner="worker:a"), NOW) == POLL_LEASED
    assert poll_interval(replace(at, state=State.SUCCEEDED), NOW) is None


def test_task_ids_are_long_random_and_kept_only_as_their_hash() -> None:
    """Two ids never repeat, carry 256 bits, and the hash is stable and not the id."""
    rand = random.Random(7)
    first, second = new_task_id(rand), new_task_id(rand)
    assert first != second and len(first) == len("task_") + 64
    assert task_hash(first) == task_hash(first) and first not in task_hash(first)


def test_a_handle_expires_at_its_time_to_live() -> None:
    handle = TaskHandle(
        task_hash="h",
        operation_id="op_1",
        owner="agent:a",
        tool="submit_job",
        existing=False,
        created_at=NOW,
        expires_at=NOW + timedelta(hours=1),
    )
    assert handle.ttl == timedelta(hours=1) and not handle.expired(NOW)
    assert handle.expired(NOW + timedelta(hours=1))
    assert not replace(handle, expires_at=None).expired(NOW + timedelta(days=999))
