"""CLI start-up: `jobtrail --version` and `jobtrail status` import only what they use."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from cliutil import JOBTRAIL, Workspace

HEAVY = ("aiohttp", "psycopg", "mcp", "jsonschema")


def imported(ws: Workspace, *args: str, whole: bool = False) -> set[str]:
    """The top-level packages `jobtrail ARGS` imports, from `python -X importtime` (with
    `whole`, the full module names)."""
    done = subprocess.run(
        # the console script a user runs (not `-m`: its `from ... import main` is the path)
        [sys.executable, "-X", "importtime", JOBTRAIL, *args],
        cwd=ws.root,
        env=ws.env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    names = re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*([\w.]+)$", done.stderr, re.M)
    return set(names) if whole else {name.split(".")[0] for name in names}


def test_version_imports_no_heavy_package(ws: Workspace) -> None:
    """`jobtrail --version` prints the version without importing the network or database
    stacks, the schema validator, the MCP SDK, or even click (bench/startup.py measures it
    against a bare `python -c pass`: the target is within 5x)."""
    modules = imported(ws, "--version")
    assert "jobtrail" in modules  # the parse above saw the imports
    assert set(HEAVY) & modules == set() and "click" not in modules


def test_version_imports_no_record_types_nor_tables(ws: Workspace) -> None:
    """`jobtrail --version` loads neither rich (tables) nor the core's record types, the
    store interface, the views nor the command group: only the entry point and the
    version constant."""
    modules = imported(ws, "--version", whole=True)
    assert "jobtrail._version" in modules  # the parse above saw jobtrail's imports
    unwanted = {"rich", "jobtrail.core", "jobtrail.store.changes", "jobtrail.presentation.views"}
    unwanted |= {"jobtrail.presentation.explain", "jobtrail.presentation.text"}
    unwanted |= {"jobtrail.cli.group", "jobtrail.cli.context"}
    assert {
        m for m in modules if m in unwanted or m.startswith(("rich.", "jobtrail.core."))
    } == set()


def test_status_on_sqlite_imports_no_heavy_package(ws: Workspace) -> None:
    """`jobtrail status OP` on a SQLite ledger imports neither aiohttp, psycopg, mcp nor
    jsonschema: only the store it reads and the printing it does."""
    op = ws.json("submit", "simulator", "--body", '{"account": "acct_1"}')["operation_id"]
    assert Path(ws.db).exists()
    modules = imported(ws, "status", op)
    assert "sqlite3" in modules
    assert set(HEAVY) & modules == set()
