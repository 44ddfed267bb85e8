"""Smoke test of `bench floor_same` (bench/floor_same.py) at tiny sizes, so it cannot rot:
each side runs in its own process against the simulator, the worker with and without the
seen-again fast path; the figures are checked for what they must hold, never for speed.
Callgrind is left out (JOBTRAIL_BENCH_CALLGRIND=0)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the bench package lives beside src/, not in it

from bench import floor, floor_same  # noqa: E402

pytestmark = pytest.mark.slow


async def test_floor_same_sets_both_workers_against_the_floor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every side did its polls in turns; both workers' polls are set against the floor's,
    with their statements counted."""
    monkeypatch.setenv("JOBTRAIL_BENCH_CALLGRIND", "0")
    monkeypatch.setattr(floor_same, "polls_per_run", lambda quick: 300)
    measured: dict[str, Any] = {}
    real = floor_same.measure

    async def keep(quick: bool) -> dict[str, Any]:
        measured.update(await real(quick))
        return measured

    monkeypatch.setattr(floor_same, "measure", keep)
    report = await floor_same.run(quick=True)
    by = measured["by"]
    assert set(by) == set(floor_same.KINDS)
    for kind, runs in by.items():
        assert len(runs) == floor.ROUNDS
        assert all(run["units"] >= 300 and run["cpu_ms"] > 0 for run in runs), kind
    assert all(t["statements"] > 1 for t in measured["traced"].values())
    names = [f.name for f in report.figures]
    assert any(n.startswith("jobtrail-poll, CPU") for n in names)
    assert any(n.startswith("jobtrail-poll-judged, CPU") for n in names)
    assert all(f.baseline is not None and "floor" in f.baseline_name for f in report.figures)
