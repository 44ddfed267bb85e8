"""The SQLite ledger's clock (store/machine_clock.py): the machine's boot clock moves in steps
of 10 ms, yet the times one process records are never equal, so the record keeps the order
of the facts it holds."""

from __future__ import annotations

import itertools
import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from jobtrail.store import machine_clock
from jobtrail.store.machine_clock import machine_now, machine_wall

needs_proc = pytest.mark.skipif(not Path("/proc/uptime").exists(), reason="no /proc/uptime")


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


@needs_proc
def test_the_kept_open_uptime_file_is_read_afresh_each_time() -> None:
    """/proc/uptime stays open between readings (one pread each), and each reading is the
    boot clock as it stands then, not the text the first read saw."""
    name, first = machine_now()
    time.sleep(0.06)
    again, later = machine_now()
    assert name == again and name.startswith("boot:")
    assert 0.04 <= later - first < 5


@needs_proc
def test_a_descriptor_closed_or_reused_under_the_clock_is_opened_again() -> None:
    """A daemonizing parent may close every descriptor, and the number then name another
    file: the clock notices, opens /proc/uptime again and stays on the boot clock."""
    name, first = machine_now()
    os.close(machine_clock._fd[0])
    assert machine_now()[0] == name
    os.close(machine_clock._fd[0])
    other = os.open(__file__, os.O_RDONLY)  # most likely takes the number just freed
    try:
        again, later = machine_now()
        assert again == name and first <= later < first + 5
        assert machine_clock._fd[0] != other
    finally:
        os.close(other)
