"""The demo shows each scenario ending where the design says it must."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from jobtrail.cli.demo import run_demo
from jobtrail.core.states import State

from cliutil import JOBTRAIL

EXPECTED = {
    "happy path": State.SUCCEEDED,
    "create answer dropped": State.SUCCEEDED,
    "503 + Retry-After": State.SUCCEEDED,
    "cancel honoured": State.CANCELLED,
    "cancel races completion": State.SUCCEEDED,
    "batch with failed items": State.SUCCEEDED,
    "result fails validation": State.RESULT_VALIDATION_FAILED,
    "contract violation": State.NEEDS_HUMAN,
    "OpenAI batch, answer lost": State.SUCCEEDED,
    "Anthropic batch, answer lost": State.NEEDS_HUMAN,
}


async def test_every_scenario_ends_in_its_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each demo scenario reaches its expected state, and the audit log verifies."""
    monkeypatch.delenv("REPORTS_API_TOKEN", raising=False)
    rows, verdict = await run_demo(str(tmp_path / "demo.db"), tmp_path / "data")
    assert {row.scenario: row.op.state for row in rows} == EXPECTED
    assert verdict.ok
    batch = next(row for row in rows if row.scenario == "batch with failed items")
    assert "498 items succeeded, 2 failed" in batch.outcome
    race = next(row for row in rows if row.scenario == "cancel races completion")
    assert race.op.cancel_intent is not None
    anthropic = next(row for row in rows if row.scenario == "Anthropic batch, answer lost")
    assert anthropic.attempts == 1, "a create that nothing can look up was sent again"


def test_the_demo_command_runs(tmp_path: Path) -> None:
    """`jobtrail demo` (the README's first command) prints the table and the audit check."""
    done = subprocess.run(
        [JOBTRAIL, "demo"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "audit log intact" in done.stdout and "needs_human" in done.stdout
    # Every operation id is printed whole (piped, at the default width): none is cut.
    shown = re.findall(r"\bop_[0-9A-Z]+(…?)", done.stdout)
    assert len(shown) >= len(EXPECTED) and "…" not in shown
