"""Fixtures for tests that run the `jobtrail` command as a user would."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jobtrail.simulator import SimulatorThread
from wire import WireProxy

from cliutil import Workspace, make_workspace
from harness import SECRET


@pytest.fixture(scope="module")
def simulator() -> Iterator[SimulatorThread]:
    """The provider simulator in a background thread, requiring the test secret, reached
    through the wire check's recording proxy (tests/wire.py): `base_url` is the proxy's."""
    with SimulatorThread(token=SECRET) as sim, WireProxy(sim.base_url) as proxy:
        sim.base_url = proxy.base_url
        yield sim


@pytest.fixture
def ws(tmp_path: Path, simulator: SimulatorThread) -> Workspace:
    """A folder with providers/simulator.toml pointing at the simulator."""
    return make_workspace(tmp_path, simulator.base_url)
