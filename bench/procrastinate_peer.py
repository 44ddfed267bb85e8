"""Benchmark: a job queue as a peer (issue 24): procrastinate on PostgreSQL (why this one:
bench/peer_procrastinate.py), the same create → poll → collect lifecycle against the same
simulator, every job with a result of its own, against jobtrail on a PostgreSQL ledger.

jobtrail commits each intent, transition and result with `synchronous_commit` on (unchanged
safe reads without waiting for the WAL flush) and writes each result as a file, fsynced with
its directory; procrastinate commits each job row, each job's end and its events, and the
benchmark's result row, all with `synchronous_commit` on. Each side runs alone in a fresh
process and a fresh database, the sides alternated over at least two rounds (bench.peers);
every figure is a ratio against procrastinate's run in the same round, printed with the load
average before each run.
"""

from __future__ import annotations

from bench.common import Report, pg_available, simulator_process
from bench.dbos_peer import JOBTRAIL_PG, sizes
from bench.peers import Entry, explain, ratio_figures, rounds, traced

PROCRASTINATE = Entry("procrastinate on PostgreSQL", "procrastinate", store="postgres")


async def run(quick: bool) -> Report:
    report = Report("procrastinate_peer")
    try:
        import procrastinate  # noqa: F401
    except ImportError:
        report.note("procrastinate is not installed: pip install -e '.[bench]' (make bench does)")
        return report
    problem = pg_available()
    if problem is not None:
        report.note(f"PostgreSQL unreachable, skipped: {problem}")
        return report
    n, count, n_traced = sizes(quick)
    entries = [JOBTRAIL_PG, PROCRASTINATE]
    with simulator_process() as url:
        runs = await rounds(url, entries, n, count, report)
        ratio_figures(report, runs, JOBTRAIL_PG, PROCRASTINATE, n)
        explain(report, runs, n)
        await traced(url, report, entries, n_traced)
    return report
