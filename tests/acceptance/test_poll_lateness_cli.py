"""Poll lateness counts of a real `jobtrail worker` process (docs/dashboard.md, "Poll
lateness"): stopped by SIGTERM it writes them as it ends, every read the simulator answered
counted; killed by SIGKILL before its first flush it loses them, and nothing else."""

from __future__ import annotations

import asyncio
import signal
import subprocess
from pathlib import Path

import pytest

from jobtrail.ledger import open_ledger
from jobtrail.simulator import SimulatorThread

from cliutil import JOBTRAIL, Workspace
from waits import until_true

# `make slow` (its own CI step): worker processes signalled in real time.
pytestmark = pytest.mark.slow


def counted(db: Path) -> int:
    """The status reads the ledger's poll lateness histogram holds, all providers."""

    async def read() -> int:
        ledger = await open_ledger(str(db), create=False)
        try:
            return sum(n for n, _ in (await ledger.metric_counts()).lateness.values())
        finally:
            await ledger.close()

    return asyncio.run(read())


def reads_of(sim: SimulatorThread, op: str) -> int:
    jobs = {job.job_id for job in sim.jobs.values() if job.client_reference == op}
    return sum(1 for call in sim.calls if call.kind == "status" and call.job_id in jobs)


def polling(ws: Workspace, sim: SimulatorThread, account: str) -> tuple[str, subprocess.Popen[str]]:
    """A worker process polling a job that never ends, once it made three status reads."""
    body = f'{{"account": "{account}", "_sim": {{"never_finish": true}}}}'
    op = ws.json("submit", "simulator", "--body", body)["operation_id"]
    worker = subprocess.Popen(
        [JOBTRAIL, "worker", "--lease", "10s"],
        cwd=ws.root,
        env=ws.env(),
        stderr=subprocess.PIPE,
        text=True,
    )
    until_true(lambda: reads_of(sim, op) >= 3, 30, "three status reads")
    return op, worker


def test_a_worker_stopped_by_sigterm_writes_every_read_it_counted(
    ws: Workspace, simulator: SimulatorThread
) -> None:
    op, worker = polling(ws, simulator, "lateness-term")
    worker.send_signal(signal.SIGTERM)
    _, said = worker.communicate(timeout=30)
    assert worker.returncode == 0, said
    assert counted(ws.db) == reads_of(simulator, op) >= 3


def test_a_worker_killed_loses_only_its_unflushed_counts(
    ws: Workspace, simulator: SimulatorThread
) -> None:
    op, worker = polling(ws, simulator, "lateness-kill")
    worker.kill()  # within the first flush period (5 s) of its start
    worker.communicate(timeout=30)
    assert counted(ws.db) < reads_of(simulator, op)
    assert ws.json("status", op)["state"] == "observing"  # the operation lost nothing
