"""Smoke test of `bench floor` (bench/floor.py, bench/floorwork.py) at tiny sizes, so it
cannot rot: every side runs in its own process against the simulator in its own, through the
code `make bench` runs, and the figures are checked for what they must hold (each side did
its units, every figure has its floor beside it), never for speed. Callgrind is left out
here (minutes under valgrind); its parsing is checked on a captured line."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the bench package lives beside src/, not in it

from bench import floor  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture
def tiny(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """60 operations observing, 120 polls and 60 lifecycles a run, no callgrind runs."""
    monkeypatch.setattr(floor, "sizes", lambda quick: (60, 120, 60))
    monkeypatch.setattr(floor, "callgrind_sizes", lambda quick: {})
    yield


async def test_floor_runs_every_side_against_its_floor(
    tiny: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each side did its units in turns; the poll and the lifecycle are set against the
    floor's in CPU and wall clock, with the loads and the statements counted."""
    measured: dict[str, Any] = {}
    real = floor.measure

    async def keep(quick: bool) -> dict[str, Any]:
        measured.update(await real(quick))
        return measured

    monkeypatch.setattr(floor, "measure", keep)
    report = await floor.run(quick=True)
    by = measured["by"]
    assert set(by) == {"bare", "floor-poll", "jobtrail-poll", "floor-life", "jobtrail-life"}
    for kind, runs in by.items():
        assert len(runs) == floor.ROUNDS
        for run in runs:
            assert run["cpu_ms"] > 0 and run["per_s"] > 0 and run["load"] >= 0
            wanted = 60 if kind.endswith("life") else 120
            assert run["units"] >= wanted, (kind, run)
    traced = measured["traced"]
    assert traced["jobtrail-poll"]["statements"] > 1
    assert traced["jobtrail-life"]["statements"] > 12
    names = [f.name for f in report.figures]
    assert any(n.startswith("an unchanged poll, CPU") for n in names)
    assert any(n.startswith("a lifecycle, CPU") for n in names)
    assert all(f.baseline is not None and "floor" in f.baseline_name for f in report.figures)
    assert any("SQL statements run" in d for d in report.details)


def test_callgrind_count_is_read_from_its_summary() -> None:
    """The instruction count is callgrind's `Collected` line."""
    stderr = "==12== Events    : Ir\n==12== Collected : 123456789\n==12==\n==12== I   refs: 1"
    assert floor.COLLECTED.findall(stderr) == ["123456789"]
