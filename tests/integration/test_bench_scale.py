"""Smoke tests of `bench scale`, `bench processes` and bench/claimcount.py at tiny sizes, so
they cannot rot: the real worker process against the simulator in its own process, through
the code `make bench` runs; the figures are checked for what they must hold (lateness and
where it comes from reported, CPU sampled, the claim's plan read), never for speed."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from stores import pg_url, require_postgres

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the bench package lives beside src/, not in it

# the benchmarks' PostgreSQL server: the one the tests use
_test_pg = urlsplit(pg_url())
os.environ.setdefault("JOBTRAIL_BENCH_PG", urlunsplit(_test_pg._replace(path="", query="")))

from jobtrail.providers.file.config import parse_provider  # noqa: E402
from jobtrail.store import open_store  # noqa: E402

from bench import claimcount, processes, scale, seed  # noqa: E402
from bench.common import (  # noqa: E402
    Report,
    fresh_pg_database,
    provider_doc,
    simulator_process,
    use_token,
)

pytestmark = pytest.mark.slow


async def test_scale_reports_lateness_and_where_it_comes_from(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """200 observing polled over 2 s on SQLite: lateness percentiles, memory and the load,
    and the worker's own timings (loop stalls, claims, GC by generation, transactions)."""
    monkeypatch.setattr(scale, "LEAD", 2.0)
    use_token()
    report = Report("scale")
    with simulator_process() as url, tempfile.TemporaryDirectory() as folder:
        jobs = await seed.create_sim_jobs(url, 200, {"never_finish": True})
        spec = parse_provider(provider_doc(url, poll_initial="2s", poll_cap="2s"))
        db = str(Path(folder) / "ledger.db")
        await (await open_store(db)).close()
        await scale.observe(report, "sqlite", db, spec, jobs, 2.0)
    summary, sources = report.details
    assert "N=200 (load " in summary and "p99" in summary and "RSS" in summary
    for part in ("event-loop stalls", "claims", "GC gen 2", "SQLite transactions", "WAL resets"):
        assert part in sources, part
    late, rss = report.figures[1], report.figures[0]
    assert late.unit == "s" and late.value >= 0 and rss.value > 10


@pytest.mark.postgres
async def test_processes_samples_what_bounds_the_speed_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """20 short jobs per run, 1 and 2 processes in turns on both stores: each run's CPU per
    operation, split by process, and on PostgreSQL the server's CPU and wait samples."""
    require_postgres()
    monkeypatch.setattr(processes, "size", lambda quick: 20)
    report = await processes.run(quick=True)
    runs = [line for line in report.details if "process(es)" in line]
    assert len(runs) == 8  # 2 stores x (1, 2, 2, 1)
    assert all("20/20 succeeded" in line and "CPU per operation" in line for line in runs)
    assert all("PostgreSQL backends" in line for line in runs if line.startswith("postgresql"))
    for line in runs:
        assert ("(2 processes)" if ", 2 process(es)" in line else "(0 processes)") in line
    assert len(report.figures) == 2


async def test_claimcount_claims_and_reads_the_plan() -> None:
    """The claiming child claims what is due; the plan is the due index's."""
    with tempfile.TemporaryDirectory() as folder:
        db = str(Path(folder) / "ledger.db")
        await (await open_store(db)).close()
        claimcount.seeded(db, 120)
        assert await claimcount.claim_many(db, 3) == 120
        assert "operations_due" in claimcount.sqlite_plan(db)


@pytest.mark.postgres
async def test_claimcount_explains_the_postgres_claim() -> None:
    require_postgres()
    url = fresh_pg_database("jobtrail_bench_claimcount_test")
    await (await open_store(url)).close()
    claimcount.seeded(url, 5_000)
    found = claimcount.pg_explain(url)
    assert found["buffers"] > 0 and found["ms"] > 0
    assert found["due_scan"].startswith("Index Scan on operations_due: 50 rows")
