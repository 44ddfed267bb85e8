"""The ledger's clock as a process reads it. Every judgment of time that decides safety or
an end (a lease, the visibility window, the create, result and cancel deadlines, "may I
still send") is made on it, never on the process's own clock (DESIGN: one clock): a worker
whose clock is off, or stepped, judges exactly as the others do.

SQLite: the machine's wall clock as every process on the machine reads it alike
(machine_clock.machine_wall; a time faker or a wrong setting inside one process moves it
not), the machine the ledger file and every process sharing it are on.

PostgreSQL: the server's clock. Asking the server at every reading would add a round trip
to every step of every operation, so a process keeps the server's last reading and where
the machine's boot clock stood when it arrived, and reckons the server's time from there
(the boot clock runs at the same rate, is never stepped and no time faker reaches it). A
reading comes free with every claim that claims something (the new lease's end, less its
length, read by the claim's own statement); it is asked for on its own at open, and before
a claim or a write when the last is older than RESYNC seconds (an idle worker: one small
query every RESYNC s; a process that only writes, such as the webhook receiver, likewise). The
reckoning trails the server's clock by at most the round trip that brought the reading
(milliseconds), the side on which a deadline ends late, never early.
"""

from __future__ import annotations

from datetime import UTC, datetime

from jobtrail.store.machine_clock import machine_now

RESYNC = 5.0  # seconds a reading of the server's clock is reckoned from before a fresh one


class ServerClock:
    """The PostgreSQL server's clock, reckoned from its last reading on the boot clock."""

    def __init__(self) -> None:
        self._server: float | None = None  # the server's epoch seconds at the last reading
        self._at = 0.0  # the boot clock when that reading arrived

    def read(self, server_epoch: float) -> None:
        """The server's clock said `server_epoch` (seconds since the epoch) just now."""
        self._server, self._at = server_epoch, machine_now()[1]

    def stale(self) -> bool:
        """Whether the last reading is older than RESYNC seconds (or there is none)."""
        return self._server is None or machine_now()[1] - self._at >= RESYNC

    def now(self) -> datetime:
        """The server's time now, as reckoned; before any reading, this process's clock."""
        if self._server is None:
            return datetime.now(UTC)
        return datetime.fromtimestamp(self._server + machine_now()[1] - self._at, UTC)
