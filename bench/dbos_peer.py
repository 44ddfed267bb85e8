"""Benchmark: DBOS Transact as a peer, made fair (issue 24). The same lifecycle (create the
job, poll its status until it ends, fetch its result) against the same simulator over HTTP
(its own process), at the same concurrency (50), every job returning a result of its own
(the simulator's `distinct_result`), by:

* jobtrail: `Ledger.submit`, then the real worker (bench.peerside.jobtrail_side), on a
  SQLite ledger (WAL; intents, transitions and results committed with `synchronous=FULL`,
  unchanged safe reads without waiting for the disk) or a PostgreSQL ledger (the same
  commits with `synchronous_commit` on and off respectively); each result a content-
  addressed file, fsynced with its directory;
* DBOS Transact (bench.peer_dbos): a workflow of steps, its system database a SQLite file
  in DBOS's default journal mode (a rollback journal) and, separately, the same in WAL
  (both `synchronous=FULL`), or a PostgreSQL database (`synchronous_commit` on).

Both poll every 10 ms, and the simulator ends each job after the same number of status
reads, so both make the same calls. Each side runs alone in a fresh process, the sides
alternated over at least two rounds (bench.peers); every figure is a ratio against the peer's
run in the same round, printed with the load average before each run. Reported: lifecycles
per second (first create to last result), stored bytes per operation by table (results
included: jobtrail's files, DBOS's workflow outputs), and what each side syncs per lifecycle.
jobtrail also records what DBOS does not: fingerprints, idempotency tokens, transitions with
evidence, observations, leases with fencing, a hash-chained audit log, result validation.
"""

from __future__ import annotations

from bench.common import Report, pg_available, simulator_process
from bench.peers import Entry, explain, ratio_figures, rounds, traced

JOBTRAIL = Entry("jobtrail on SQLite", "jobtrail")
DBOS_DEFAULT = Entry("DBOS on SQLite, default journal (rollback)", "dbos", journal="default")
DBOS_WAL = Entry("DBOS on SQLite, WAL", "dbos", journal="wal")
JOBTRAIL_PG = Entry("jobtrail on PostgreSQL", "jobtrail", store="postgres")
DBOS_PG = Entry("DBOS on PostgreSQL", "dbos", store="postgres")


def sizes(quick: bool) -> tuple[int, int, int]:
    """(lifecycles per run, rounds, lifecycles per traced run)."""
    return (60, 2, 20) if quick else (2000, 2, 500)


async def run(quick: bool) -> Report:
    report = Report("dbos_peer")
    try:
        import dbos  # noqa: F401
    except ImportError:
        report.note("DBOS is not installed: pip install -e '.[bench]' (make bench does)")
        return report
    n, count, n_traced = sizes(quick)
    stores = [("sqlite", [JOBTRAIL, DBOS_DEFAULT, DBOS_WAL])]
    problem = pg_available()
    if problem is None:
        stores.append(("postgres", [JOBTRAIL_PG, DBOS_PG]))
    else:
        report.note(f"PostgreSQL unreachable, its half skipped: {problem}")
    with simulator_process() as url:
        for _store, entries in stores:
            runs = await rounds(url, entries, n, count, report)
            for peer in entries[1:]:
                ratio_figures(report, runs, entries[0], peer, n)
            explain(report, runs, n)
            await traced(url, report, entries, n_traced)
    return report
