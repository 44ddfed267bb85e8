"""Seeding for the benchmarks that measure observing and claiming, not submitting: remote
jobs made on the simulator over HTTP, and operations already observing them inserted with
plain SQL (executemany on SQLite, COPY on PostgreSQL).

Rows come from one operation built the way `Ledger.submit` builds it and encoded by the
store's own codec; each row then gets its own ids, remote job and next poll time, and holds
its provider document's key, the document stored once (as the store does it).
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import psycopg

from jobtrail.core.canonical import fingerprint
from jobtrail.core.ids import idempotency_token, operation_id, trace_id
from jobtrail.core.model import JobRequest, Operation
from jobtrail.core.states import RemoteStatus, State
from jobtrail.providers.file.config import ProviderSpec
from jobtrail.store import codec
from jobtrail.store import postgres as pg_store
from jobtrail.store import sqlite as sqlite_store

from bench.common import auth_headers

BODY = {"report": "monthly-sales", "month": "2026-02", "format": "csv"}


async def create_sim_jobs(
    base_url: str, n: int, sim: dict[str, Any], *, concurrency: int = 50
) -> list[str]:
    """Create `n` remote jobs on the simulator with the faults `sim`; their ids in order."""
    ids: list[str] = [""] * n
    queue = iter(range(n))
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector, headers=auth_headers()) as session:

        async def creator() -> None:
            for i in queue:
                body = BODY | {"n": i, "_sim": sim}
                async with session.post(f"{base_url}/v1/reports", json=body) as response:
                    response.raise_for_status()
                    ids[i] = (await response.json())["job_id"]

        await asyncio.gather(*(creator() for _ in range(concurrency)))
    return ids


def template(spec: ProviderSpec, now: datetime) -> Operation:
    """An operation as submitted and accepted: observing, polled once already."""
    rand = random.Random(7)
    op_id = operation_id(now, rand)
    request = JobRequest(method=spec.create_method, target=spec.target, body=BODY, headers={})
    deadlines = spec.deadlines
    return Operation(
        operation_id=op_id,
        key=op_id,
        provider=spec.name,
        provider_config=spec.document,
        capabilities=spec.capabilities,
        request=request,
        fingerprint=fingerprint(request.method, request.target, BODY, {}),
        idempotency_token=idempotency_token(rand),
        trace_id=trace_id(rand),
        actor="bench",
        authorized_by=None,
        reason=None,
        created_at=now,
        create_deadline=now + deadlines["create"],
        result_deadline=now + timedelta(days=7),
        cancel_timeout=deadlines["cancel"],
        state=State.OBSERVING,
        remote_job_id="job_template",
        remote_state="running",
        remote_status=RemoteStatus.RUNNING,
        progress={"completed": 1, "total": 3},
        status_url="/v1/jobs/job_template",
        next_poll_at=now,
        poll_count=1,
        create_attempts=1,
        updated_at=now,
    )


def rows(
    codec_: codec.Codec,
    base: Operation,
    job_ids: list[str] | None,
    dues: Iterator[datetime | None],
    *,
    count: int,
    seed: int,
    ended: bool = False,
) -> Iterator[dict[str, Any]]:
    """`count` rows like `base`, each with its own ids and its next due time from `dues`;
    `ended` rows have succeeded (no next poll)."""
    rand = random.Random(seed)
    if ended:
        base = replace(base, state=State.SUCCEEDED, remote_state="succeeded", next_poll_at=None)
    row = codec_.operation_row(base)
    for i in range(count):
        op_id = operation_id(base.created_at, rand)
        job = job_ids[i] if job_ids else f"job_{seed}_{i:08d}"
        yield row | {
            "operation_id": op_id,
            "op_key": op_id,
            "idempotency_token": idempotency_token(rand),
            "trace_id": trace_id(rand),
            "remote_job_id": job,
            "status_url": f"/v1/jobs/{job}",
            "next_poll_at": codec_.t_out(next(dues)),
        }


def spread(start: datetime, seconds: float, count: int) -> Iterator[datetime]:
    """`count` due times evenly over `seconds` from `start`, in a shuffled order."""
    order = list(range(count))
    random.Random(11).shuffle(order)
    for k in order:
        yield start + timedelta(seconds=seconds * k / max(1, count))


def never() -> Iterator[None]:
    while True:
        yield None


_INSERT = (
    f"INSERT INTO operations ({', '.join(codec.COLUMNS)}) "
    f"VALUES ({', '.join(':' + c for c in codec.COLUMNS)})"
)


_INSERT_CONFIG = (
    "INSERT INTO provider_configs (digest, document) VALUES ({mark}, {mark}) "
    "ON CONFLICT (digest) DO NOTHING"
)


def keyed(batch: Iterator[dict[str, Any]], configs: dict[str, str]) -> Iterator[dict[str, Any]]:
    """The rows as the store writes them: each provider document swapped for its key, the
    documents collected in `configs` (key -> text) to be stored once."""
    for row in batch:
        key, document = codec.keyed_config(row)
        configs[key] = document
        yield row


def insert_sqlite(path: str, batch: Iterator[dict[str, Any]]) -> int:
    conn = sqlite3.connect(path, isolation_level=None)
    configs: dict[str, str] = {}
    try:
        conn.execute("BEGIN IMMEDIATE")
        cur = conn.executemany(_INSERT, keyed(batch, configs))
        count = cur.rowcount
        conn.executemany(_INSERT_CONFIG.format(mark="?"), configs.items())
        conn.execute("COMMIT")
        return count
    finally:
        conn.close()


def insert_postgres(url: str, batch: Iterator[dict[str, Any]]) -> int:
    columns = codec.COLUMNS
    configs: dict[str, str] = {}
    n = 0
    with psycopg.connect(url) as conn, conn.cursor() as cur:
        with cur.copy(f"COPY operations ({', '.join(columns)}) FROM STDIN") as copy:
            for row in keyed(batch, configs):
                copy.write_row([row[c] for c in columns])
                n += 1
        cur.executemany(_INSERT_CONFIG.format(mark="%s"), list(configs.items()))
        conn.commit()
    return n


def codec_for(db: str) -> codec.Codec:
    return pg_store.CODEC if db.startswith("postgresql://") else sqlite_store.CODEC


def insert(db: str, batch: Iterator[dict[str, Any]]) -> int:
    if db.startswith("postgresql://"):
        return insert_postgres(db, batch)
    return insert_sqlite(db, batch)


def now() -> datetime:
    return datetime.now(UTC)
