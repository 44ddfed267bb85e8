"""The ledger's clock (store/ledger_clock.py): what every judgment of time reads. On
PostgreSQL the server's clock, reckoned between readings on the machine's boot clock; on
SQLite the machine's wall clock as every process reads it. A process whose own clock is
faked (faketime, an hour ahead) reads the same time as an honest one."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from jobtrail.ledger import Ledger
from jobtrail.store import Store
from jobtrail.store import ledger_clock as lc

from cliutil import faketime_library
from stores import fresh_ledger, pg_url


def test_the_server_clock_is_reckoned_from_its_last_reading(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A reading of 1000 s taken at boot-clock 50 reads 1007 s at boot-clock 57, whatever
    the process's own clock says; past RESYNC seconds it asks to be read again."""
    boot = [50.0]
    monkeypatch.setattr(lc, "machine_now", lambda: ("boot:x", boot[0]))
    clock = lc.ServerClock()
    assert clock.stale()
    clock.read(1000.0)
    boot[0] = 57.0
    assert clock.now() == datetime.fromtimestamp(1007.0, UTC)
    boot[0] = 50.0 + lc.RESYNC / 2
    assert not clock.stale()
    boot[0] = 50.0 + lc.RESYNC
    assert clock.stale()


async def test_a_ledger_reads_its_store_s_clock(store: Store) -> None:
    """A ledger given no clock reads the store's: the database server's, or the machine's."""
    ledger = Ledger(store)
    before = store.ledger_now()
    assert before <= ledger.now() <= store.ledger_now()
    if "Postgres" in type(store).__name__:
        with psycopg.connect(pg_url(), autocommit=True) as conn:
            row = conn.execute("SELECT clock_timestamp()").fetchone()
        assert row is not None
        assert abs((row[0] - ledger.now()).total_seconds()) < 1.0
    else:
        assert abs((datetime.now(UTC) - ledger.now()).total_seconds()) < 2.0


@pytest.mark.parametrize("offset", ["+1h", "-1h"])
async def test_a_faked_process_clock_reads_the_ledger_s_time(
    store_kind: str, tmp_path: Path, offset: str
) -> None:
    """A process under faketime an hour off reads the ledger's time within a second or two
    of an honest process (the boot time's lost fraction on SQLite, a round trip on
    PostgreSQL), while its own clock is an hour off."""
    script = (
        "import asyncio, datetime, sys\n"
        "from jobtrail.store import open_store\n"
        "async def main():\n"
        "    store = await open_store(sys.argv[1])\n"
        "    print(store.ledger_now().timestamp(), datetime.datetime.now().timestamp())\n"
        "    await store.close()\n"
        "asyncio.run(main())\n"
    )
    async with fresh_ledger(store_kind, tmp_path) as db:
        env = {"PATH": "/usr/bin:/bin", "LD_PRELOAD": faketime_library(), "FAKETIME": offset}
        done = subprocess.run(
            [sys.executable, "-c", script, db.url], env=env, capture_output=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        ledger, own = (float(x) for x in done.stdout.split())
        real = datetime.now(UTC).timestamp()
        assert abs(own - real) > timedelta(minutes=59).total_seconds()  # the faker works
        assert abs(ledger - real) < 3.0
