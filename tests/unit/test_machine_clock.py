"""The SQLite ledger's clock (store/machine_clock.py): the machine's boot clock moves in steps
of 10 ms, yet the times one process records are never equal, so the record keeps the order
of the facts it holds."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from jobtrail.store.machine_clock import machine_wall


def test_a_process_s_readings_are_strictly_increasing_within_a_boot_clock_step() -> None:
    """Thousands of readings inside a few 10 ms steps: each later than the one before."""
    readings = [machine_wall() for _ in range(5000)]
    assert all(a < b for a, b in itertools.pairwise(readings))


def test_the_readings_stay_with_the_machine_s_wall_clock() -> None:
    """The steps within a tick never carry the time past the machine's (it trails it by
    under a second: the boot time's lost fraction)."""
    for _ in range(2000):
        machine_wall()
    now = datetime.now(UTC)
    assert now - timedelta(seconds=2) < machine_wall() <= now + timedelta(milliseconds=50)
