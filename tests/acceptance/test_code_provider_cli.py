"""A code provider installed as a package (a dist-info with an entry point) is used by the
stock CLI by name; a worker without it never touches its operations, and the CLI says
which provider they wait for."""

from __future__ import annotations

import json
import re
import sqlite3
import urllib.request
from pathlib import Path

import pytest

from jobtrail.cli.exits import RunExit, run_exit
from jobtrail.core.states import State
from jobtrail.simulator import SimulatorThread

from cliutil import Workspace
from harness import ROOT, SECRET
from plugins import install


def docs_example() -> str:
    """The example provider of docs/code-providers.md (the block after "## Example")."""
    text = (ROOT / "docs" / "code-providers.md").read_text(encoding="utf-8")
    tail = text[text.index("\n## Example") :]
    match = re.search(r"^```python\n(.*?)^```", tail, re.M | re.S)
    assert match is not None
    return match.group(1)


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """The docs' example provider, installed as the package `reports-provider` 1.0.0."""
    return install(
        tmp_path / "site",
        "reports-provider",
        {"reports_provider": docs_example()},
        {"reports": "reports_provider:make"},
        version="1.0.0",
    )


@pytest.fixture
def workspace(tmp_path: Path, simulator: SimulatorThread) -> Workspace:
    """A folder whose providers/reports.toml holds the code provider's settings only."""
    (tmp_path / "providers").mkdir()
    (tmp_path / "providers" / "reports.toml").write_text(
        f'code = "reports"\n[settings]\nbase_url = "{simulator.base_url}"\n'
        '[poll]\ninitial = "100ms"\ncap = "500ms"\n',
        encoding="utf-8",
    )
    return Workspace(root=tmp_path, base_url=simulator.base_url)


def _rows(db: Path, sql: str, *args: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql, args).fetchall()


def test_the_stock_worker_drives_an_installed_code_provider_to_succeeded(
    workspace: Workspace, site: Path
) -> None:
    """`submit reports` (no provider file needed beyond its settings) records kind, name and
    version; `jobtrail worker` finds the entry point and collects a validated result. A
    broken package installed beside it stops nothing, and is not mentioned while no
    operation needs it (tests/integration/test_code_plugins.py: named once one does)."""
    ws, path = workspace, str(site)
    install(
        site, "broken-provider", {"broken_mod": "import no_sdk_xyz\n"}, {"aws": "broken_mod:make"}
    )
    body = '{"account": "a", "items": 3}'
    submitted = ws.json("submit", "reports", "--body", body, PYTHONPATH=path)
    assert submitted["provider"] == "reports"
    assert (submitted["provider_kind"], submitted["provider_version"]) == ("code", "1.0.0")
    op = submitted["operation_id"]
    done = ws.run("worker", "--until-idle", PYTHONPATH=path)
    # The banner lists every code provider this worker has (jobtrail's own AWS ones too).
    (banner,) = [line for line in done.stderr.splitlines() if "code providers:" in line]
    assert "reports" in banner.split("code providers: ", 1)[1].rstrip(")").split(", ")
    assert "broken_mod" not in done.stderr
    status = ws.json("status", op)
    assert status["state"] == "succeeded", ws.run("explain", op).stdout
    assert status["result"]["valid"] and status["result"]["items"]["total"] == 3
    assert "provider_missing" not in status
    stored = _rows(
        ws.db,
        "SELECT provider_kind, provider, provider_version FROM operations WHERE operation_id = ?",
        op,
    )
    assert stored == [("code", "reports", "1.0.0")]
    assert SECRET.encode() not in ws.db.read_bytes()


def test_a_worker_without_the_provider_leaves_the_operation_alone(
    workspace: Workspace, site: Path
) -> None:
    """Without the plug-in, `worker --until-idle` ends without claiming the operation (no
    lease, no attempt, never the HTTP provider); status and explain name the missing
    provider; `run` exits 7 naming it. With the plug-in, `run` then finishes it."""
    ws, path = workspace, str(site)
    op = ws.json("submit", "reports", "--body", '{"account": "b"}', PYTHONPATH=path)["operation_id"]
    done = ws.run("worker", "--until-idle")
    assert "0 claims" in done.stderr
    assert _rows(ws.db, "SELECT count(*) FROM leases WHERE operation_id = ?", op) == [(0,)]
    assert _rows(ws.db, "SELECT count(*) FROM attempts WHERE operation_id = ?", op) == [(0,)]
    status = ws.json("status", op)
    assert status["state"] == "create_pending"
    assert "the code provider 'reports' 1.0.0 is not installed here" in status["provider_missing"]
    assert "waiting for a worker that has the code provider 'reports'" in status["next_step"]
    explained = ws.run("explain", op).stdout
    assert "provider:   the code provider 'reports' 1.0.0 — not installed here" in explained
    refused = ws.run("run", op, check=False)
    assert refused.returncode == RunExit.PROVIDER_MISSING
    assert "code provider 'reports' 1.0.0" in refused.stderr
    assert _rows(ws.db, "SELECT count(*) FROM attempts WHERE operation_id = ?", op) == [(0,)]
    finished = ws.run("run", op, "--json", check=False, PYTHONPATH=path)
    assert finished.returncode == 0, finished.stderr
    assert json.loads(finished.stdout)["state"] == "succeeded"


def test_an_unset_secret_variable_of_a_code_provider_is_named(
    workspace: Workspace, site: Path
) -> None:
    """A code provider's `secret_env` variable that is not set is named as an HTTP
    provider's credential is: a warning at `submit`, loudly at the start of `run` and
    `worker`. The provider may find its credentials elsewhere, so it is still let try (here
    the simulator refuses the call); with the variable set, nothing is said."""
    ws, path, unset = workspace, str(site), {"PYTHONPATH": str(site), "REPORTS_API_TOKEN": ""}
    body = '{"account": "c"}'
    submitted = ws.run("submit", "reports", "--body", body, "--json", **unset)
    assert (
        "warning: environment variable REPORTS_API_TOKEN is not set: the operation is "
        "recorded, but the code provider 'reports' may have no credential to send it with"
    ) in submitted.stderr
    first = json.loads(submitted.stdout)["operation_id"]
    loud = "WARNING: environment variable REPORTS_API_TOKEN is not set"
    ran = ws.run("run", first, "--json", check=False, **unset)
    assert ran.stderr.count(loud) == 1 and "code provider 'reports'" in ran.stderr
    assert ran.returncode == run_exit(State.FAILED), ran.stderr  # tried, and refused: 401
    quiet = ws.run("submit", "reports", "--body", '{"account": "d"}', "--json", PYTHONPATH=path)
    assert "REPORTS_API_TOKEN" not in quiet.stderr
    second = json.loads(quiet.stdout)["operation_id"]
    worked = ws.run("worker", "--until-idle", **unset)
    assert worked.stderr.count(loud) == 1
    assert ws.json("status", second)["state"] == "failed"
    assert "REPORTS_API_TOKEN" not in ws.run("worker", "--until-idle", PYTHONPATH=path).stderr


@pytest.mark.parametrize(
    "command",
    [
        ["worker", "--until-idle"],
        ["run", "op_x"],
        ["mcp"],
        ["serve", "--port", "0"],
        ["submit", "x"],
    ],
)
def test_a_bad_provider_module_stops_the_command_with_one_line(
    workspace: Workspace, command: list[str]
) -> None:
    """`--provider-module` naming a module that does not import stops `worker`, `run`,
    `mcp`, `serve` and `submit` at start, with one line naming it (exit 1)."""
    done = workspace.run(*command, "--provider-module", "nowhere_xyz", check=False)
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert (
        "--provider-module nowhere_xyz: cannot import it: ModuleNotFoundError: No module "
        "named 'nowhere_xyz'"
    ) in line


def test_provider_check_prints_what_a_code_provider_declares(
    workspace: Workspace, site: Path
) -> None:
    """`provider check NAME` for a code provider: version, reconciliation, deadlines."""
    done = workspace.run("provider", "check", "reports", PYTHONPATH=str(site))
    lines = done.stdout.splitlines()
    assert lines[0] == "code provider 'reports' version 1.0.0"
    text = done.stdout
    assert "provable: a lost create answer is resolved by same-token retry and lookup" in text
    assert "$REPORTS_API_TOKEN (set); never stored" in text
    assert "settings" in text and "base_url" in text
    document = workspace.json("provider", "check", "reports", PYTHONPATH=str(site))
    assert (document["kind"], document["version"]) == ("code", "1.0.0")


def test_resolve_adopts_a_job_id_for_a_code_provider_operation(
    workspace: Workspace, simulator: SimulatorThread, tmp_path: Path
) -> None:
    """A code provider's operation stuck in needs_human (the same token answered with two
    job ids): `resolve --decision adopt` with a job id it never saw reads it through the
    code provider named by --provider-module, then adopts it; without the plug-in the
    read cannot be made and nothing changes."""
    ws = workspace
    module = tmp_path / "modules"
    module.mkdir()
    (module / "reports_provider.py").write_text(docs_example(), encoding="utf-8")
    env = {"PYTHONPATH": str(module)}
    plugin = ("--provider-module", "reports_provider")
    body = '{"account": "d", "_sim": {"drop_create_answer": true, "different_id_on_retry": true}}'
    op = ws.json("submit", "reports", *plugin, "--body", body, **env)["operation_id"]
    stuck = ws.run("run", op, *plugin, "--json", check=False, **env)
    assert json.loads(stuck.stdout)["state"] == "needs_human", stuck.stderr
    unseen = _job_made_elsewhere(simulator.base_url)
    decide = ("resolve", op, "--decision", "adopt", "--job-id", unseen)
    who = ("--actor", "alice", "--reason", "support found it")
    refused = ws.run(*decide, *who, check=False)
    assert refused.returncode == 1 and "reports" in refused.stderr
    assert ws.json("status", op)["state"] == "needs_human"
    adopted = ws.json(*decide, *who, *plugin, **env)
    assert adopted["state"] == "accepted" and adopted["remote_job_id"] == unseen


def _job_made_elsewhere(base_url: str) -> str:
    """A job made on the simulator outside jobtrail (a person's own call), by its API."""
    request = urllib.request.Request(
        f"{base_url}/v1/reports",
        data=b'{"account": "d"}',
        headers={"Authorization": f"Bearer {SECRET}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        job_id: str = json.loads(answer.read())["job_id"]
    return job_id


FACTORY_FAILS = """
import os

def make(settings):
    token = os.environ["REPORTS_API_TOKEN"]
    raise ValueError(f"the token {token} was refused while signing in")

def on_import():
    raise RuntimeError("signing with " + os.environ["REPORTS_API_TOKEN"] + " at import")

PROVIDERS = {"reports": make}
"""


@pytest.mark.parametrize("when", ["factory", "import"])
def test_a_code_providers_error_never_prints_its_secret(
    workspace: Workspace, tmp_path: Path, when: str
) -> None:
    """A factory (or a module on import) that fails with the secret it read in its message:
    `submit` says what failed in one line, with the secret redacted."""
    module = tmp_path / "modules"
    module.mkdir()
    source = FACTORY_FAILS + ("on_import()\n" if when == "import" else "")
    (module / "failing_provider.py").write_text(source, encoding="utf-8")
    env = {"PYTHONPATH": str(module)}
    plugin = ("--provider-module", "failing_provider")
    done = workspace.run("submit", "reports", *plugin, "--body", "{}", check=False, **env)
    assert done.returncode == 1
    assert SECRET not in done.stdout + done.stderr
    assert SECRET[:12] not in done.stdout + done.stderr
    said = "was refused while signing in" if when == "factory" else "at import"
    assert said in done.stderr and "[redacted]" in done.stderr, done.stderr
