"""Smoke tests of the peer benchmarks (bench/dbos_peer.py, bench/procrastinate_peer.py) at
tiny sizes, so they cannot rot: every side runs in its own process against the simulator in
its own, through the same code `make bench` runs, and the figures are checked for what they
must hold (every lifecycle ended, distinct results stored, bytes counted), never for speed.

The jobtrail side runs everywhere. The peers (DBOS Transact, procrastinate) are in the
`bench` extra only: without them their tests are skipped with a loud reason (and the session
summary says so), or fail under JOBTRAIL_REQUIRE_BENCH=1, as in CI, which installs the extra.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Iterator
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

from bench import dbos_peer, peers, procrastinate_peer  # noqa: E402
from bench.common import Report, simulator_process  # noqa: E402

pytestmark = pytest.mark.slow


def require_peer(module: str) -> None:
    """Skip (fail, under JOBTRAIL_REQUIRE_BENCH=1) when a peer of the bench extra is missing."""
    if importlib.util.find_spec(module) is not None:
        return
    message = (
        f"bench peer not installed: {module} is in the bench extra "
        "(pip install -e '.[bench]', or make bench); its smoke test did NOT run"
    )
    if os.environ.get("JOBTRAIL_REQUIRE_BENCH") == "1":
        pytest.fail(f"{message}; JOBTRAIL_REQUIRE_BENCH=1 makes this a failure", pytrace=False)
    pytest.skip(message)


@pytest.fixture
def tiny(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """4 lifecycles a run, 2 alternating rounds, 2 in the traced run."""
    monkeypatch.setattr(dbos_peer, "sizes", lambda quick: (4, 2, 2))
    monkeypatch.setattr(procrastinate_peer, "sizes", lambda quick: (4, 2, 2))
    yield


def notes(report: Report, text: str) -> list[str]:
    return [line for line in report.details if text in line]


@pytest.mark.parametrize("store", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_jobtrail_side(store: str) -> None:
    """jobtrail's side alone: every lifecycle ends, each result is its own file, the stored
    bytes include the audit log and the results, and (with strace) its fsyncs are counted
    between its marks."""
    if store == "postgres":
        require_postgres()
    entry = peers.Entry("jobtrail", "jobtrail", store=store)
    traced = shutil.which("strace") is not None
    with simulator_process() as url:
        run = await peers.run_side(url, entry, 3, traced=traced)
    out = run.out
    assert out["results"] == 3
    assert out["ops_per_s"] > 0
    assert out["bytes"]["audit_log"] > 0
    assert out["bytes"]["(result files)"] > 0
    assert out["bytes_per_op"] >= out["bytes"]["(result files)"] / 3
    if traced:
        # each result file and its directory are synced, whatever the store
        assert out["syncs"] >= 2 * 3
    if store == "postgres":
        assert out["pg"]["xact_commit"] > 0


async def test_dbos_peer(tiny: None) -> None:
    """The whole DBOS benchmark at tiny size: both journal modes, as found after launch, and
    both stores, with a ratio per round and the bytes by table of every side."""
    require_peer("dbos")
    require_postgres()
    report = await dbos_peer.run(quick=True)
    names = [f.name for f in report.figures]
    assert sum("lifecycles/s" in name and "sqlite" in name for name in names) == 4
    assert sum("lifecycles/s" in name and "postgres" in name for name in names) == 2
    # a tiny run may not grow a SQLite file (free pages are reused): only rates must pair up
    assert all("load" in f.name for f in report.figures)
    assert all(f.ratio is not None for f in report.figures if f.unit == "ops/s")
    assert notes(report, "journal_mode=delete, synchronous=FULL")
    assert notes(report, "journal_mode=wal, synchronous=FULL")
    assert notes(report, "operation_outputs")
    assert notes(report, "dbos.operation_outputs")
    assert notes(report, "transactions committed in its database")


async def test_procrastinate_peer(tiny: None) -> None:
    """The whole procrastinate benchmark at tiny size: rounds, ratios and bytes by table."""
    require_peer("procrastinate")
    require_postgres()
    report = await procrastinate_peer.run(quick=True)
    assert [f.baseline_name for f in report.figures] == ["procrastinate on PostgreSQL"] * 4
    assert all("load" in f.name for f in report.figures)
    assert all(f.ratio is not None for f in report.figures if f.unit == "ops/s")
    assert notes(report, "procrastinate_jobs")
    assert notes(report, "peer_results")
