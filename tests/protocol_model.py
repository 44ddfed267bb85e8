"""The Promela model of the operation protocol (model/protocol.pml), read as text: its
transition table, its state and evidence names, and the moves its processes make; and
`check`, which runs SPIN on it (model/check.sh). Without spin or gcc the SPIN tests skip
with a loud reason, or fail under JOBTRAIL_REQUIRE_SPIN=1 (as in CI, .ci/run)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

MODEL_DIR = Path(__file__).resolve().parents[1] / "model"
MODEL = MODEL_DIR / "protocol.pml"
CHECK = MODEL_DIR / "check.sh"

_TABLE = re.compile(r"BEGIN TRANSITIONS.*?\*/(.*?)/\* END TRANSITIONS \*/", re.S)
_EDGE = re.compile(r"edge\((\w+), (\w+), ([^;]+)\);")
_EVIDENCE = re.compile(r"E\((\w+)\)")
_DEFINE = re.compile(r"^#define (\w+) (\d+)\b", re.M)
_MOVE = re.compile(r"move\((\w+), EV_(\w+)\)")


def text() -> str:
    return MODEL.read_text(encoding="utf-8")


def table() -> dict[tuple[str, str], frozenset[str]]:
    """The model's transition table: (from, to) -> evidence names, as written."""
    found = _TABLE.search(text())
    assert found is not None, "model/protocol.pml has no BEGIN/END TRANSITIONS block"
    edges: dict[tuple[str, str], frozenset[str]] = {}
    for line in found.group(1).strip().splitlines():
        edge = _EDGE.fullmatch(line.strip())
        assert edge is not None, f"not an edge line in the table: {line!r}"
        key = (edge.group(1), edge.group(2))
        assert key not in edges, f"edge {key} written twice in the model's table"
        edges[key] = frozenset(_EVIDENCE.findall(edge.group(3)))
    return edges


def defines() -> dict[str, int]:
    """Every `#define NAME number` of the model."""
    return {name: int(value) for name, value in _DEFINE.findall(text())}


def moves() -> set[tuple[str, str]]:
    """The (to state, evidence) of every move the model's processes make."""
    body = _TABLE.sub("", text())
    return {(to, evidence) for to, evidence in _MOVE.findall(body)}


@dataclass(frozen=True)
class Verdict:
    errors: int
    states: int
    seconds: float
    complete: bool  # the whole state space was searched (the depth bound never cut it)
    output: str


def spin_problem() -> str | None:
    missing = [tool for tool in ("spin", "gcc") if shutil.which(tool) is None]
    if missing:
        return f"{' and '.join(missing)} not installed (apt-get install spin gcc)"
    return None


def require_spin() -> None:
    """Skip the calling test (fail it, under JOBTRAIL_REQUIRE_SPIN=1) without spin or gcc."""
    problem = spin_problem()
    if problem is None:
        return
    message = f"the protocol model cannot be checked: {problem}"
    if os.environ.get("JOBTRAIL_REQUIRE_SPIN") == "1":
        pytest.fail(f"{message}; JOBTRAIL_REQUIRE_SPIN=1 makes this a failure", pytrace=False)
    pytest.skip(message)


def check(switch: str | None, tmp: Path) -> Verdict:
    """Run model/check.sh with `switch` (None: the design) and read pan's report."""
    args = [str(CHECK)] if switch is None else [str(CHECK), f"-D{switch}"]
    done = subprocess.run(
        args,
        capture_output=True,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp)},
        timeout=600,
        check=False,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, f"model/check.sh failed:\n{out[-3000:]}"
    errors = re.search(r"errors: (\d+)", out)
    states = re.search(r"(\d+) states, stored", out)
    seconds = re.search(r"elapsed time ([\d.e+]+) seconds", out)
    assert errors and states and seconds, f"no pan report in:\n{out[-3000:]}"
    return Verdict(
        errors=int(errors.group(1)),
        states=int(states.group(1)),
        seconds=float(seconds.group(1)),
        complete="max search depth too small" not in out,
        output=out,
    )
