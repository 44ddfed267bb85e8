"""A worker facing another process's write lock on its SQLite ledger for longer than the
store's busy timeout (issue 19): it no longer dies with "database is locked". It says, in a
log line, that another process holds the ledger's write lock and that it keeps waiting;
once the lock is let go it works on and the operation ends. A real SQLite file, a real
second process holding `BEGIN IMMEDIATE`, the simulator over loopback, the real worker.
(The busy timeout is shortened for the test; the production one is 30 s.)"""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from jobtrail.core.states import State
from jobtrail.store import sqlite_files

from harness import harness

HOLD = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()  # held until the test says so
conn.execute("COMMIT")
"""


async def test_a_worker_waits_out_another_process_write_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(sqlite_files, "BUSY_TIMEOUT_MS", 200)
    caplog.set_level(logging.INFO, logger="jobtrail.worker")
    async with harness(tmp_path, monkeypatch=monkeypatch) as rig:
        op = await rig.submit({"account": "a"})
        with subprocess.Popen(
            [sys.executable, "-c", HOLD, rig.db],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        ) as holder:
            try:
                assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
                worker = asyncio.create_task(rig.run())
                # the worker meets the lock, says so, and is still running
                for _ in range(200):
                    if "keeps waiting" in caplog.text or worker.done():
                        break
                    await asyncio.sleep(0.05)
                assert not worker.done(), worker.exception() if worker.done() else None
                line = next(
                    r.getMessage() for r in caplog.records if "keeps waiting" in r.getMessage()
                )
                assert "stayed locked by another process's write" in line and rig.db in line
                holder.communicate("go\n", timeout=30)  # the lock is let go
                assert holder.returncode == 0
                await asyncio.wait_for(worker, timeout=60)
            finally:
                if holder.poll() is None:
                    holder.kill()
        assert (await rig.op(op)).state is State.SUCCEEDED
        assert "the ledger's write lock is free again" in caplog.text
