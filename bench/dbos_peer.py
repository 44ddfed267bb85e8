"""Benchmark: a peer in the same run. The same lifecycle (create the job, poll its status until
it ends, fetch its result) against the same simulator over HTTP (its own process), at the same
concurrency (50), done twice in one run:

* by jobtrail: `Ledger.submit` then the real worker on a SQLite ledger (synchronous=FULL),
  results stored as content-addressed files;
* by a DBOS Transact workflow on SQLite (`pip install 'jobtrail[bench]'`): one step per HTTP
  call (create, each status read, the result fetch), a durable `DBOS.sleep_async` between
  polls, the result returned by the workflow (so DBOS stores it, as jobtrail does).

Both poll every 10 ms, and the simulator ends each job after the same number of status reads,
so both make the same calls. Reported: operations per second (first create to last result)
and stored bytes per operation (database and WAL after a checkpoint, plus jobtrail's result
files, less the size of each store when empty). jobtrail also records what DBOS does not:
fingerprints, idempotency tokens, transitions with evidence, observations, leases with
fencing, a hash-chained audit log and result validation.
"""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp

from jobtrail.core.states import State
from jobtrail.providers.config import parse_provider
from jobtrail.runtime import runtime

from bench import breakdown
from bench.common import (
    Figure,
    Report,
    Stopwatch,
    auth_headers,
    provider_doc,
    simulator_process,
    use_token,
)

CONCURRENCY = 50
EVERY = "10ms"
TERMINAL = ("succeeded", "failed", "cancelled")


def stored_bytes(db: Path, *extra: Path) -> int:
    """The database and its WAL after a checkpoint, plus every file under `extra`."""
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    files = [p for p in db.parent.glob(db.name + "*") if p.is_file()]
    for folder in extra:
        files += [p for p in folder.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files)


def body(i: int) -> dict[str, Any]:
    return {"account": f"acct_{i % 97}", "format": "csv", "n": i}


async def jobtrail_side(url: str, n: int, folder: Path) -> tuple[float, float]:
    """(operations per second, stored bytes per operation) for jobtrail."""
    use_token()
    db, data = folder / "jobtrail.db", folder / "jobtrail-data"
    spec = parse_provider(provider_doc(url, poll_initial=EVERY, poll_cap=EVERY))
    async with runtime(str(db), data, worker_id="bench-worker", concurrency=CONCURRENCY) as rt:
        empty = stored_bytes(db, data)
        clock = Stopwatch()
        queue = iter(range(n))

        async def submitter() -> None:
            for i in queue:
                await rt.ledger.submit(spec, body(i), actor="bench")

        await asyncio.gather(*(submitter() for _ in range(CONCURRENCY)))
        await rt.worker.run(until_idle=True)
        seconds = clock.seconds
        ended = await rt.ledger.store.list_operations(states=[State.SUCCEEDED], limit=n + 1)
        assert len(ended) == n, f"{len(ended)} of {n} jobtrail operations succeeded"
    return n / seconds, (stored_bytes(db, data) - empty) / n


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


async def dbos_side(url: str, n: int, folder: Path) -> tuple[float, float]:
    """(operations per second, stored bytes per operation) for DBOS Transact on SQLite."""
    from dbos import DBOS

    db = folder / "dbos.db"
    holder: list[aiohttp.ClientSession] = []
    lifecycle = dbos_workflow(lambda: holder[0], url)
    DBOS(
        config={
            "name": "jobtrail-bench-peer",
            "system_database_url": f"sqlite:///{db}",
            "log_level": "WARNING",
        }
    )
    DBOS.launch()
    try:
        connector = aiohttp.TCPConnector(limit=CONCURRENCY * 2)
        async with aiohttp.ClientSession(headers=auth_headers(), connector=connector) as session:
            holder.append(session)
            empty = stored_bytes(db)
            gate = asyncio.Semaphore(CONCURRENCY)

            async def one(i: int) -> str:
                async with gate:
                    handle = await DBOS.start_workflow_async(lifecycle, body(i))
                    result: str = await handle.get_result()
                    return result

            clock = Stopwatch()
            results = await asyncio.gather(*(one(i) for i in range(n)))
            seconds = clock.seconds
            assert all(results), "every DBOS workflow should return the result"
    finally:
        DBOS.destroy()
    return n / seconds, (stored_bytes(db) - empty) / n


JOBTRAIL_TABLES = ("operations", "leases", "attempts", "transitions", "observations", "audit_log")


def explain_bytes(report: Report, folder: Path, n: int) -> None:
    """Where each side's bytes per operation go (SQLite's dbstat; the databases were
    checkpointed when measured), so a missed goal comes with its measured reason."""
    ours, theirs = folder / "jobtrail.db", folder / "dbos.db"
    results = sum(p.stat().st_size for p in (folder / "jobtrail-data").rglob("*") if p.is_file())
    report.note(f"jobtrail rows per operation: {breakdown.rows(ours, JOBTRAIL_TABLES)} / {n}")
    report.note(
        f"jobtrail pages per operation by table (indexes included): "
        f"{breakdown.per_op(breakdown.table_pages(ours), n)}; of which indexes "
        f"{breakdown.index_pages(ours) / n:,.0f}; result files {results / n:,.0f}"
    )
    columns = breakdown.column_bytes(ours, JOBTRAIL_TABLES)
    report.note(
        f"jobtrail value bytes per operation: {sum(columns.values()) / n:,.0f} in all; "
        f"largest columns: {breakdown.per_op(columns, n, floor=40)}"
    )
    report.note(
        f"DBOS pages per operation by table: {breakdown.per_op(breakdown.table_pages(theirs), n)}"
    )


async def run(quick: bool) -> Report:
    report = Report("dbos_peer")
    n = 200 if quick else 2000
    try:
        import dbos  # noqa: F401
    except ImportError:
        report.note("DBOS is not installed: pip install -e '.[bench]' (make bench does)")
        return report
    with simulator_process() as url, tempfile.TemporaryDirectory(prefix="jobtrail-peer-") as tmp:
        folder = Path(tmp)
        sides: dict[str, Callable[[str, int, Path], Awaitable[tuple[float, float]]]] = {
            "jobtrail": jobtrail_side,
            "dbos": dbos_side,
        }
        measured = {name: await side(url, n, folder) for name, side in sides.items()}
        explain_bytes(report, folder, n)
    (ours, our_bytes), (theirs, their_bytes) = measured["jobtrail"], measured["dbos"]
    report.add(
        Figure(
            name=f"lifecycles/s, {n} operations, concurrency {CONCURRENCY}",
            value=ours,
            unit="ops/s",
            baseline=theirs,
            baseline_name="DBOS Transact on SQLite",
            target=">= 2x",
            met=ours >= 2 * theirs,
        )
    )
    report.add(
        Figure(
            name="stored bytes per operation",
            value=our_bytes,
            unit="B/op",
            baseline=their_bytes,
            baseline_name="DBOS Transact on SQLite",
            target="<= 1x",
            met=our_bytes <= their_bytes,
            higher_is_better=False,
        )
    )
    return report
