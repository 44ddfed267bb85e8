"""Archives verify everything (issue 19): every line an archive holds is bound by its
checkpoint, so a forged operation, transition, attempt, observation or lease line (or a
forged header) is refused by `archive verify` and `archive show`, each naming the line,
where only the audit lines used to be checked and `archive show` told the forged story."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cliutil import Workspace

Edit = Callable[[dict[str, Any]], bool]  # changes a record in place; True when it did


def _archived(ws: Workspace) -> tuple[str, Path]:
    done = ws.json("submit", "simulator", "--body", '{"n": 1}')["operation_id"]
    assert ws.drive(done)["state"] == "succeeded"
    ws.json("prune", "--finished-before", "1ms", "--archive", "old.jsonl.gz")
    return done, ws.root / "old.jsonl.gz"


def _forge(path: Path, edit: Edit) -> int:
    """Rewrite the archive with the first record `edit` changes; its line number (1-based)."""
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines if line.strip()]
    number = next(n for n, record in enumerate(records, 1) if edit(record))
    with gzip.open(path, "wt", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
    return number


def _set(kind: str, field: str, value: Any) -> Edit:
    def edit(record: dict[str, Any]) -> bool:
        if record.get("type") != kind or record.get(field) == value:
            return False
        record[field] = value
        return True

    return edit


FORGERIES = {
    "operation": _set("operation", "state", "failed"),
    "transition": _set("transition", "cause", "a person said so"),
    "attempt": _set("attempt", "outcome", "rejected"),
    "observation": _set("observation", "remote_state", "failed"),
    "lease": _set("lease", "owner", "someone-else"),
    "header": _set("header", "actor", "cli:nobody"),
}


@pytest.mark.parametrize("kind", list(FORGERIES))
def test_a_forged_archive_line_is_refused_and_named(ws: Workspace, kind: str) -> None:
    """The intact archive verifies and shows; once one line is forged (and re-compressed,
    as a forger would), `archive verify` and `archive show` exit 1 and name that line."""
    done, path = _archived(ws)
    assert ws.run("archive", "verify", str(path)).returncode == 0
    assert ws.run("archive", "show", str(path), done).returncode == 0
    number = _forge(path, FORGERIES[kind])
    verified = ws.run("archive", "verify", str(path), check=False)
    assert verified.returncode == 1, verified.stdout
    assert f"archive line {number} " in verified.stdout, verified.stdout
    assert "intact" not in verified.stdout
    report = json.loads(ws.run("archive", "verify", str(path), "--json", check=False).stdout)
    assert report["ok"] is False
    assert any(f"archive line {number} " in p for p in report["problems"])
    shown = ws.run("archive", "show", str(path), done, check=False)
    assert shown.returncode == 1
    assert f"archive line {number} " in shown.stderr, shown.stdout + shown.stderr
    assert "a person said so" not in shown.stdout and "someone-else" not in shown.stdout


def test_an_archived_line_moved_into_another_operation_or_dropped_is_named(
    ws: Workspace,
) -> None:
    """Dropping a transition line leaves its operation's lines short of what the
    checkpoint bound: named, with the operation."""
    done, path = _archived(ws)
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines if line.strip()]
    dropped = next(n for n, r in enumerate(records, 1) if r.get("type") == "transition")
    with gzip.open(path, "wt", encoding="utf-8") as out:
        for n, record in enumerate(records, 1):
            if n != dropped:
                out.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
    verified = ws.run("archive", "verify", str(path), check=False)
    assert verified.returncode == 1 and done in verified.stdout, verified.stdout
