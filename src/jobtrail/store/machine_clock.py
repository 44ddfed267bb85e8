"""The clock SQLite leases are measured on: this machine's boot clock, which every process
sharing a SQLite ledger (all on one machine) reads alike.

A process's own clock cannot be trusted to agree with another's: an NTP step, a wrong
timezone setting or a time faker (faketime fakes time(), gettimeofday and every
clock_gettime, CLOCK_MONOTONIC included, inside the process it runs) would let one worker
see another's live lease as expired and take it over. The kernel's count of seconds since
boot, read as text from /proc/uptime, is the same for every process on the machine, is never
stepped when the wall clock is set, and is not reached by a library that intercepts time
calls. It restarts at every boot, so each reading is paired with the boot's id
(/proc/sys/kernel/random/boot_id): a lease taken during another boot died with that boot.

Without /proc (not Linux), the process's monotonic clock stands in, labelled as such: it is
machine-wide and never stepped either, but a time faker inside a process can move it.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

_UPTIME = "/proc/uptime"
_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


@functools.cache
def clock_name() -> str:
    """Which clock readings belong to: `boot:<id>` for this boot, else `monotonic`."""
    try:
        return "boot:" + _BOOT_ID.read_text(encoding="ascii").strip()
    except OSError:
        return "monotonic"


def machine_now() -> tuple[str, float]:
    """(clock name, seconds on it now): what a SQLite lease's expiry is written and judged
    in. Resolution 10 ms, ample for leases of seconds."""
    name = clock_name()
    if name != "monotonic":
        try:
            return name, _uptime()
        except (OSError, ValueError, IndexError):
            pass
    return "monotonic", time.monotonic()


_fd: list[int] = []  # /proc/uptime, opened once: a poll reads the clock several times
_opening = threading.Lock()


def _uptime() -> float:
    """Seconds since boot, read afresh from /proc/uptime: the kernel writes its text anew
    for every read at offset 0, so one descriptor kept open and read with pread (one system
    call, no file position shared between threads) gives what opening the file each time
    (three calls) did. A descriptor closed under us (a daemonizing parent closing them all),
    or whose number now names another file, is found out by its text and opened again."""
    for attempt in range(2):
        if attempt or not _fd:
            with _opening:
                _fd[:] = [os.open(_UPTIME, os.O_RDONLY | os.O_CLOEXEC)]
        fd = _fd[0]
        try:
            text = os.pread(fd, 64, 0)
            if text.endswith(b"\n") and text.count(b" ") == 1:
                return float(text.split()[0])
        except (OSError, ValueError):
            pass
    raise OSError(f"cannot read {_UPTIME}")


_STAT = "/proc/stat"
_BTIME_FOR = 1.0  # seconds of the boot clock a reading of the boot time is reused for
_btime: list[float] = []  # [boot time (epoch seconds), boot-clock reading when read]


def machine_wall() -> datetime:
    """The machine's wall clock, as every process on it reads it alike whatever its own
    clock says: the kernel's boot time (/proc/stat `btime`, seconds since the epoch, moved
    only when the machine's clock is set) plus the boot clock. It trails the real time by
    the boot time's lost fraction (under a second), the same for every process, so no
    difference between two readings is off. Without /proc, the process's own clock."""
    name, reading = machine_now()
    if name == "monotonic":
        return datetime.now(UTC)
    if not _btime or not 0 <= reading - _btime[1] < _BTIME_FOR:
        boot = _boot_time()
        if boot is None:
            return datetime.now(UTC)
        _btime[:] = [boot, reading]
    return _after_the_last(_btime[0] + reading)


_last: list[int] = [0]  # the last reading, in microseconds since the epoch
_lock = threading.Lock()
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _after_the_last(seconds: float) -> datetime:
    """`seconds` as a time, later than every time this process read before: the boot clock
    moves in steps of 10 ms, so two facts a process records within one step would otherwise
    carry the same time and the record could not tell which came first. Within a step each
    reading is a microsecond (the ledger's precision) after the one before: 10,000 readings
    per step before the time runs ahead of the clock, far beyond what a ledger commits."""
    with _lock:
        micros = max(round(seconds * 1_000_000), _last[0] + 1)
        _last[0] = micros
    return _EPOCH + timedelta(microseconds=micros)


def _boot_time() -> float | None:
    try:
        with open(_STAT, "rb") as stat:
            for line in stat:
                if line.startswith(b"btime "):
                    return float(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None
