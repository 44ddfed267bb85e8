"""Helpers for the MCP Tasks tests: the task client of docs/agents.md (run as written), a
provider folder on the simulator, and `jobtrail mcp` over stdio as the SDK's client starts
it (through `sh -c 'echo $$ > PIDFILE; exec ...'`, so a test can SIGKILL the very server)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from mcp import StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]
JOBTRAIL = str(ROOT / ".venv" / "bin" / "jobtrail")
SECRET = "sim-secret-7f3a9c2e51d84b06"


def tasks_api() -> Any:
    """The block of docs/agents.md that defines `Tasks`, executed: its names."""
    text = (ROOT / "docs" / "agents.md").read_text(encoding="utf-8")
    (source,) = [
        block
        for block in re.findall(r"^```python\n(.*?)^```", text, re.M | re.S)
        if "class Tasks(ClientExtension)" in block
    ]
    # A module of its own: pydantic resolves a generic model's names in its module.
    module = ModuleType("agents_md_tasks")
    sys.modules[module.__name__] = module
    exec(compile(source, "docs/agents.md", "exec"), module.__dict__)
    return module


def provider_folder(folder: Path, base_url: str) -> Path:
    """`reports`: the simulator profile at `base_url`, polled quickly, demanding SECRET."""
    folder.mkdir(parents=True, exist_ok=True)
    text = (ROOT / "providers" / "simulator.toml").read_text(encoding="utf-8")
    text = text.replace('"http://127.0.0.1:8700"', json.dumps(base_url))
    text += '\n[poll]\ninitial = "200ms"\ncap = "500ms"\n'
    (folder / "reports.toml").write_text(text, encoding="utf-8")
    return folder


def stdio_server(
    tmp_path: Path, providers: Path, *options: str, env: dict[str, str] | None = None
) -> StdioServerParameters:
    """`jobtrail mcp` on tmp_path's ledger; its pid lands in tmp_path/server.pid."""
    command = [JOBTRAIL, "--db", str(tmp_path / "l.db"), "--data-dir", str(tmp_path / "d")]
    command += ["mcp", *options]
    pidfile = tmp_path / "server.pid"
    quoted = " ".join(f"'{part}'" for part in command)
    return StdioServerParameters(
        command="/bin/sh",
        args=["-c", f"echo $$ > '{pidfile}'; exec {quoted}"],
        env={"JOBTRAIL_PROVIDERS": str(providers), "REPORTS_API_TOKEN": SECRET, **(env or {})},
        cwd=tmp_path,
    )


def submit(request: dict[str, Any], key: str) -> dict[str, Any]:
    return {"provider": "reports", "request": request, "key": key, "reason": "tasks test"}
