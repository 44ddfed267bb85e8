"""Fixtures shared by the whole test suite, grouped by concern."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from jobtrail.store import Store

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


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say loudly when PostgreSQL tests were skipped: a quiet skip would read as a pass."""
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
