"""Fixtures shared by the whole test suite, grouped by concern."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

import wirecheck
from jobtrail.simulator import Simulator
from jobtrail.store import Store
from wire import PROXIES, WireProxy

from stores import open_test_store, require_postgres

# -- stores (helpers in tests/stores.py) ---------------------------------------------------
# A test that takes `store` (or `store_kind`) runs once per store kind: on a SQLite file,
# and on PostgreSQL (marked `postgres`; skipped, or failed under JOBTRAIL_REQUIRE_PG=1,
# when the server in JOBTRAIL_TEST_PG cannot be reached). A test marked `sqlite_only` (one
# whose behaviour does not depend on the store: a provider's answers, a schedule) runs on
# SQLite alone; the store contract and whatever leans on a store's own behaviour (locking,
# SKIP LOCKED, the server's clock, fencing, stored bytes) keep both.


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "store_kind" not in metafunc.fixturenames:
        return
    kinds = [pytest.param("sqlite", id="sqlite")]
    if metafunc.definition.get_closest_marker("sqlite_only") is None:
        kinds.append(pytest.param("postgres", marks=pytest.mark.postgres, id="postgres"))
    metafunc.parametrize("store_kind", kinds, indirect=True)


@pytest.fixture
def store_kind(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    if kind == "postgres":
        require_postgres()
    return kind


@pytest.fixture
async def store(store_kind: str, tmp_path: Path) -> AsyncIterator[Store]:
    async with open_test_store(store_kind, tmp_path) as opened:
        yield opened


# -- pytest-xdist (`make fast`, `make slow`: `--dist loadscope`) ---------------------------
# A module's tests run in one worker, so its module-scoped servers are made once. Modules that
# share a session-scoped server too costly to start twice form one scope: both Airflow
# modules use one real Airflow (tests/integration/conftest.py's `airflow_server`), started
# once instead of once per worker that draws one of them.
SHARED_SCOPES = {
    "tests/integration/test_airflow.py": "airflow",
    "tests/integration/test_census_airflow.py": "airflow",
}


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    if config.getoption("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling  # only under xdist

    class Scopes(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            shared = SHARED_SCOPES.get(nodeid.split("::", 1)[0])
            return shared if shared is not None else super()._split_scope(nodeid)

    return Scopes(config, log)  # type: ignore[arg-type]


# -- the wire check (tests/wire.py, tests/wirecheck.py) -----------------------------------
# Every provider server of the tests is reached through a recording proxy, put in front
# once per kind of server: the simulator here (below), moto in tests/integration/aws_rig.py,
# AutoRest in tests/autorest_server.py, Airflow in tests/airflow_rig.py. After each test,
# the requests that crossed a proxy during it are compared with the attempts its ledgers
# recorded; a mismatch fails the test (at teardown) and names the operation and the request.


@pytest.fixture(autouse=True, scope="session")
def simulators_behind_the_wire() -> Iterator[None]:
    """Every provider simulator a test starts on loopback (`Simulator`, `SimulatorThread`,
    the harness, the vendor modes) answers through its own recording proxy: `start()` and
    `base_url` give the proxy's URL. One place for every simulator of the suite."""
    original_start, original_close = Simulator.start, Simulator.close

    async def start(self: Simulator, host: str = "127.0.0.1", port: int = 0) -> str:
        url = await original_start(self, host, port)
        if host != "127.0.0.1":  # served elsewhere (a network namespace): not proxied
            return url
        proxy = WireProxy(url)
        self.base_url = proxy.start()
        _FRONTS[id(self)] = proxy
        return self.base_url

    async def close(self: Simulator) -> None:
        proxy = _FRONTS.pop(id(self), None)
        if proxy is not None:
            proxy.stop()
        await original_close(self)

    Simulator.start = start  # type: ignore[method-assign]
    Simulator.close = close  # type: ignore[method-assign]
    yield
    Simulator.start, Simulator.close = original_start, original_close  # type: ignore[method-assign]


_FRONTS: dict[int, WireProxy] = {}


@pytest.fixture(autouse=True)
def wire_check(request: pytest.FixtureRequest) -> Iterator[None]:
    marks = {id(proxy): proxy.mark() for proxy in PROXIES}
    wirecheck.SNAPSHOTS.clear()
    wirecheck.FORGED.clear()
    wirecheck.PRUNES.clear()
    yield
    crossed = [r for proxy in PROXIES for r in proxy.since(marks.get(id(proxy), 0))]
    if not crossed or request.node.nodeid.partition("::")[0] in wirecheck.UNCHECKED:
        return
    tmp_path = request.node.funcargs.get("tmp_path")
    records = wirecheck.sqlite_records(tmp_path) if isinstance(tmp_path, Path) else []
    records += wirecheck.SNAPSHOTS
    if not records:  # no ledger: a provider called directly has no record to compare with
        return
    problems = wirecheck.check(crossed, records, [p.base_url for p in PROXIES])
    if os.environ.get("WIRECHECK_SAY"):  # how much was compared, for a person checking it
        traced = len([r for r in crossed if r.trace_id])
        print(f"\nwire check: {len(crossed)} request(s), {traced} traced, {len(records)} op(s)")
    for problem in problems:
        gap = wirecheck.known_gap(problem)
        if gap is not None:
            wirecheck.GAPS_SEEN.append(f"{request.node.nodeid}: {gap}")
    problems = [p for p in problems if wirecheck.known_gap(p) is None]
    if problems:
        pytest.fail(
            "the wire and the ledger disagree (tests/wirecheck.py):\n  " + "\n  ".join(problems),
            pytrace=False,
        )


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say loudly when PostgreSQL tests were skipped: a quiet skip would read as a pass."""
    if wirecheck.GAPS_SEEN:
        terminalreporter.write_sep("!", "WIRE CHECK: KNOWN GAPS (tests/wirecheck.py)", yellow=True)
        for line in sorted(set(wirecheck.GAPS_SEEN)):
            terminalreporter.write_line(line, yellow=True)
    skipped = terminalreporter.stats.get("skipped", [])
    reasons = {str(getattr(r, "longrepr", "")) for r in skipped}
    if any("browser tests cannot run" in reason for reason in reasons):
        terminalreporter.write_sep("!", "BROWSER TESTS WERE SKIPPED", red=True, bold=True)
        terminalreporter.write_line(
            "No headless Chromium or Playwright here; the dashboard's browser tests did NOT run "
            "(apt-get install chromium; CI runs them with JOBTRAIL_REQUIRE_BROWSER=1).",
            red=True,
        )
    if any("Airflow tests cannot run" in reason for reason in reasons):
        terminalreporter.write_sep("!", "AIRFLOW TESTS WERE SKIPPED", red=True, bold=True)
        terminalreporter.write_line(
            "Apache Airflow could not be installed or started (see the skip reason); the "
            "Airflow profile's tests against a real server did NOT run. CI runs them "
            "(JOBTRAIL_REQUIRE_AIRFLOW=1).",
            red=True,
        )
    if any("the AutoRest test server cannot run" in reason for reason in reasons):
        terminalreporter.write_sep("!", "AUTOREST TESTS WERE SKIPPED", red=True, bold=True)
        terminalreporter.write_line(
            "No Node.js or npm here; the real AutoRest LRO test server's 81 scenarios did NOT "
            "run (apt-get install nodejs npm; CI runs them with JOBTRAIL_REQUIRE_AUTOREST=1).",
            red=True,
        )
    if any("bench peer not installed" in reason for reason in reasons):
        terminalreporter.write_sep("!", "BENCH PEER SMOKE TESTS WERE SKIPPED", red=True, bold=True)
        terminalreporter.write_line(
            "DBOS or procrastinate is missing (the bench extra: pip install -e '.[bench]'); the "
            "peer benchmarks' smoke tests did NOT run. CI runs them (JOBTRAIL_REQUIRE_BENCH=1).",
            red=True,
        )
    if any("the protocol model cannot be checked" in reason for reason in reasons):
        terminalreporter.write_sep("!", "PROTOCOL MODEL NOT CHECKED", red=True, bold=True)
        terminalreporter.write_line(
            "No spin or gcc here; SPIN did NOT check the protocol model (model/protocol.pml) "
            "(apt-get install spin gcc; CI runs it with JOBTRAIL_REQUIRE_SPIN=1).",
            red=True,
        )
    if any("PostgreSQL not reachable" in reason for reason in reasons):
        terminalreporter.write_sep("!", "PostgreSQL TESTS WERE SKIPPED", red=True, bold=True)
        terminalreporter.write_line(
            "No PostgreSQL server was reachable (JOBTRAIL_TEST_PG); the PostgreSQL store, its "
            "contract and integration tests and the multi-worker crash test did NOT run. CI "
            "runs them.",
            red=True,
        )
