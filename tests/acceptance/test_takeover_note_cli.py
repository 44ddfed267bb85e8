"""`provider check` and `submit` say when a create deadline is shorter than a takeover can
take after a worker dies mid-create (twice the call timeout and a second, at least): such a
create is looked up once past its deadline, never sent again. Run as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from cliutil import JOBTRAIL
from harness import ROOT

NOTE = "is shorter than a takeover after a worker dies mid-create (at least 1m1s"


def _provider(folder: Path, create: str) -> Path:
    """The simulator's file (call timeout: the default 30 s) with this create deadline."""
    text = (ROOT / "providers" / "simulator.toml").read_text()
    path = folder / "sim.toml"
    path.write_text(text.replace('create = "2m"', f'create = "{create}"'))
    return path


def _run(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBTRAIL_")}
    env["REPORTS_API_TOKEN"] = "tok_test"
    return subprocess.run(
        [JOBTRAIL, *args], cwd=folder, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(("create", "said"), [("1m", True), ("2m", False)])
def test_a_create_deadline_shorter_than_a_takeover_is_said(
    tmp_path: Path, create: str, said: bool
) -> None:
    """A 1-minute create deadline with a 30 s call timeout: both commands say what becomes
    of a create whose worker dies (looked up once, never resent); 2 minutes: neither does."""
    provider = _provider(tmp_path, create)
    check = _run(tmp_path, "provider", "check", str(provider), "--json")
    assert check.returncode == 0, check.stderr
    takeover = json.loads(check.stdout)["guarantees"].get("takeover")
    submit = _run(tmp_path, "--db", "l.db", "submit", str(provider), "--body", '{"n": 1}')
    assert submit.returncode == 0, submit.stderr
    if said:
        assert takeover is not None and NOTE in takeover and "never sent again" in takeover
        assert "looked up once past its deadline" in takeover
        assert f"note: the create deadline (1m) {NOTE}" in submit.stderr
    else:
        assert takeover is None and "takeover" not in submit.stderr
