"""The DBOS Transact side of the peer benchmark (`pip install 'jobtrail[bench]'`): the same
lifecycle as a DBOS workflow, one step per HTTP call (create, each status read, the result
fetch), a durable `DBOS.sleep_async` between polls, the result returned by the workflow (so
DBOS stores it, as jobtrail does), at most 50 workflows at once.

Its system database is a SQLite file or a PostgreSQL database. DBOS leaves SQLite in its
default journal mode (a rollback journal, `journal_mode=DELETE`) with SQLite's default
`synchronous=FULL`: every committed step syncs the journal and the database. With `journal
wal` the file is switched to WAL before DBOS opens it (the mode is kept in the file), still
`synchronous=FULL`: every commit syncs the WAL. On PostgreSQL DBOS commits with the server's
`synchronous_commit` (on). The mode found after launch is reported, not assumed.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from typing import Any

import aiohttp

from bench.common import auth_headers
from bench.peerside import CONCURRENCY, TERMINAL, Marks, Where, body


def dbos_workflow(session: Callable[[], aiohttp.ClientSession], url: str) -> Any:
    """The lifecycle as a DBOS workflow of steps (defined once DBOS is importable)."""
    from dbos import DBOS

    @DBOS.step()
    async def create(request: dict[str, Any]) -> str:
        async with session().post(f"{url}/v1/reports", json=request) as response:
            response.raise_for_status()
            job_id: str = (await response.json())["job_id"]
            return job_id

    @DBOS.step()
    async def status(job_id: str) -> str:
        async with session().get(f"{url}/v1/jobs/{job_id}") as response:
            response.raise_for_status()
            state: str = (await response.json())["state"]
            return state

    @DBOS.step()
    async def fetch(job_id: str) -> str:
        async with session().get(f"{url}/v1/jobs/{job_id}/result") as response:
            response.raise_for_status()
            return await response.text()

    @DBOS.workflow()
    async def lifecycle(request: dict[str, Any]) -> str:
        job_id = await create(request)
        while await status(job_id) not in TERMINAL:
            await DBOS.sleep_async(0.01)
        return await fetch(job_id)

    return lifecycle


def sqlite_modes(db: str) -> str:
    conn = sqlite3.connect(db)
    try:
        journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
    finally:
        conn.close()
    return f"journal_mode={journal}, synchronous=FULL (SQLite's default; DBOS sets none)"


async def dbos_side(url: str, n: int, where: Where, marks: Marks) -> None:
    from dbos import DBOS

    db = where.folder / "dbos.db"
    if where.store == "postgres":
        system_db = where.pg
    else:
        system_db = f"sqlite:///{db}"
        if where.journal == "wal":
            conn = sqlite3.connect(db)
            try:
                conn.execute("PRAGMA journal_mode = WAL")
            finally:
                conn.close()
    marks.measure_empty = lambda: where.measure(db=db)
    holder: list[aiohttp.ClientSession] = []
    lifecycle = dbos_workflow(lambda: holder[0], url)
    DBOS(
        config={
            "name": "jobtrail-bench-peer",
            "system_database_url": system_db,
            "log_level": "WARNING",
        }
    )
    DBOS.launch()
    try:
        if where.store == "sqlite":
            marks.facts["durability"] = sqlite_modes(str(db))
        connector = aiohttp.TCPConnector(limit=CONCURRENCY * 2)
        async with aiohttp.ClientSession(headers=auth_headers(), connector=connector) as session:
            holder.append(session)
            gate = asyncio.Semaphore(CONCURRENCY)

            async def one(i: int) -> str:
                async with gate:
                    handle = await DBOS.start_workflow_async(lifecycle, body(i))
                    result: str = await handle.get_result()
                    return result

            marks.start()
            results = await asyncio.gather(*(one(i) for i in range(n)))
            marks.stop()
    finally:
        DBOS.destroy()
    assert len(set(results)) == n, f"{len(set(results))} distinct results of {n} workflows"
    marks.facts["results"] = len(results)
