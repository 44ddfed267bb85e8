"""Fixtures of the integration tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from airflow_rig import VERSION, Airflow
from airflow_rig import airflow_server as airflow_server_started

from harness import Harness, harness


@pytest.fixture
async def rig(
    store_kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Harness]:
    """The end-to-end rig (tests/harness.py), once per store kind: a test that takes it
    runs on SQLite and on PostgreSQL (skipped, or failed in CI, without a server)."""
    async with harness(tmp_path, monkeypatch=monkeypatch, kind=store_kind) as h:
        yield h


@pytest.fixture(scope="session")
def airflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Airflow]:
    """A real Airflow 3 server for the session (tests/airflow_rig.py): installed once into
    .cache/, started on a free loopback port, stopped at the end."""
    with airflow_server_started(tmp_path_factory.mktemp("airflow-home")) as server:
        print(
            f"\nAirflow {VERSION} ready at {server.base_url} in {server.started_in:.1f}s "
            f"({server.warm_up_runs} warm-up run(s))"
        )
        yield server
