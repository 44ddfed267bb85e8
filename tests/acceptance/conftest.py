"""Fixtures for tests that run the `jobtrail` command as a user would."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jobtrail.simulator import SimulatorThread

from cliutil import Workspace, make_workspace
from harness import SECRET


@pytest.fixture(scope="module")
def simulator() -> Iterator[SimulatorThread]:
    """The provider simulator in a background thread, requiring the test secret."""
    with SimulatorThread(token=SECRET) as sim:
        yield sim


@pytest.fixture
def ws(tmp_path: Path, simulator: SimulatorThread) -> Workspace:
    """A folder with providers/simulator.toml pointing at the simulator."""
    return make_workspace(tmp_path, simulator.base_url)
