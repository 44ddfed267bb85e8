"""The queue peer: procrastinate (`pip install 'jobtrail[bench]'`), PostgreSQL only.

Why procrastinate rather than pgqueuer: it is the PostgreSQL job queue Python users reach
for most (about twice pgqueuer's downloads), it has been maintained since 2019 with a Django
integration, and it drives PostgreSQL through psycopg 3 with an async worker, as jobtrail's
PostgreSQL store does, so both sides use the same driver.

The lifecycle as a chain of procrastinate jobs, each step committed before the next is
queued, at most 50 jobs running in one worker (`concurrency=50`, a pool of up to 20
connections: DBOS's default, more than jobtrail's 8):

* `create(request)`: POST the job, then defer `poll(job_id)`: the remote id is durable once
  that job row is committed;
* `poll(job_id)`: one status read; not yet terminal: sleep 10 ms and defer `poll` again;
  terminal: defer `collect(job_id)`;
* `collect(job_id)`: fetch the result and INSERT it into a table of the benchmark's own
  (`peer_results`, procrastinate keeps no return values), committed.

Each job's end (status, attempts) and its events are procrastinate's own commits. Every
commit waits for the WAL flush (the server's `synchronous_commit`, on). Finished jobs are kept
(`delete_jobs` left at its default, "never"), as jobtrail keeps its operations.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import aiohttp

from bench.common import auth_headers
from bench.peerside import CONCURRENCY, TERMINAL, Marks, Where, body

RESULTS_TABLE = "CREATE TABLE peer_results (job_id text PRIMARY KEY, body text NOT NULL)"


# C901: the peer\'s whole lifecycle in one function, as its users would write it
async def procrastinate_side(url: str, n: int, where: Where, marks: Marks) -> None:  # noqa: C901
    import procrastinate
    from psycopg_pool import AsyncConnectionPool

    if where.store != "postgres":
        raise SystemExit("procrastinate runs on PostgreSQL only")
    connector = procrastinate.PsycopgConnector(conninfo=where.pg, min_size=1, max_size=20)
    app = procrastinate.App(connector=connector)
    done = asyncio.Event()
    collected = 0
    holder: dict[str, Any] = {}

    def session() -> aiohttp.ClientSession:
        http: aiohttp.ClientSession = holder["http"]
        return http

    @app.task(name="create", queue="peer")
    async def create(request: dict[str, Any]) -> None:
        async with session().post(f"{url}/v1/reports", json=request) as response:
            response.raise_for_status()
            job_id = (await response.json())["job_id"]
        await poll.defer_async(job_id=job_id)

    @app.task(name="poll", queue="peer")
    async def poll(job_id: str) -> None:
        async with session().get(f"{url}/v1/jobs/{job_id}") as response:
            response.raise_for_status()
            state = (await response.json())["state"]
        if state in TERMINAL:
            await collect.defer_async(job_id=job_id)
        else:
            await asyncio.sleep(0.01)
            await poll.defer_async(job_id=job_id)

    @app.task(name="collect", queue="peer")
    async def collect(job_id: str) -> None:
        nonlocal collected
        async with session().get(f"{url}/v1/jobs/{job_id}/result") as response:
            response.raise_for_status()
            text = await response.text()
        pool: AsyncConnectionPool[Any] = holder["pool"]
        async with pool.connection() as conn:
            await conn.execute(
                "INSERT INTO peer_results (job_id, body) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                (job_id, text),
            )
        collected += 1
        if collected >= n:
            done.set()

    if not n:
        done.set()

    async with (
        app.open_async(),
        AsyncConnectionPool(where.pg, min_size=1, max_size=4, open=False) as pool,
    ):
        await app.schema_manager.apply_schema_async()
        async with pool.connection() as conn:
            await conn.execute(RESULTS_TABLE)
        holder["pool"] = pool
        tcp = aiohttp.TCPConnector(limit=CONCURRENCY * 2)
        async with aiohttp.ClientSession(headers=auth_headers(), connector=tcp) as http:
            holder["http"] = http
            marks.measure_empty = lambda: where.measure()
            marks.start()
            worker = asyncio.create_task(
                app.run_worker_async(
                    queues=["peer"], concurrency=CONCURRENCY, install_signal_handlers=False
                )
            )
            queue = iter(range(n))

            async def deferrer() -> None:
                for i in queue:
                    await create.defer_async(request=body(i))

            await asyncio.gather(*(deferrer() for _ in range(CONCURRENCY)))
            finished = asyncio.create_task(done.wait())
            await asyncio.wait({finished, worker}, timeout=60 + n, return_when="FIRST_COMPLETED")
            if not done.is_set():
                finished.cancel()
                failure = worker.exception() if worker.done() else None
                ended = f"{collected} of {n} procrastinate lifecycles ended"
                raise RuntimeError(ended) from failure
            marks.stop()
            worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await worker
        async with pool.connection() as conn:
            cursor = await conn.execute("SELECT count(DISTINCT body) FROM peer_results")
            row = await cursor.fetchone()
    distinct = int(row[0]) if row else 0
    assert distinct == n, f"{distinct} distinct results of {n} procrastinate lifecycles"
    marks.facts["results"] = distinct
