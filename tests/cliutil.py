"""Running the `jobtrail` command as a user would, in a prepared folder."""

from __future__ import annotations

import asyncio
import contextlib
import glob
import json
import os
import socket
import subprocess
import sys
import tomllib
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from jobtrail.cli.exits import run_exit
from jobtrail.core.states import State
from jobtrail.store import open_store

from harness import ROOT, SECRET
from waits import until_true

JOBTRAIL = str(Path(sys.executable).with_name("jobtrail"))


@dataclass
class Workspace:
    """A folder with a providers/ directory pointing at a running simulator."""

    root: Path
    base_url: str
    outputs: list[str] = field(default_factory=list)

    @property
    def db(self) -> Path:
        return self.root / "jobtrail.db"

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("JOBTRAIL_")}
        env |= {
            "JOBTRAIL_DB": str(self.db),
            "JOBTRAIL_PROVIDERS": str(self.root / "providers"),
            "REPORTS_API_TOKEN": SECRET,
            "JOBTRAIL_ACTOR": "tester",
        }
        return env | extra

    def run(self, *args: str, check: bool = True, **env: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [JOBTRAIL, *args],
            cwd=self.root,
            env=self.env(**env),
            capture_output=True,
            text=True,
            timeout=120,
        )
        self.outputs += [done.stdout, done.stderr]
        if check and done.returncode != 0:
            raise AssertionError(f"jobtrail {' '.join(args)} failed: {done.stderr}")
        return done

    def json(self, *args: str, **env: str) -> Any:
        return json.loads(self.run(*args, "--json", **env).stdout)

    def drive(self, operation: str, **env: str) -> Any:
        """`jobtrail run OPERATION --json` to whatever end; its exit code must name that end
        (0 only for succeeded, see jobtrail.cli.exits)."""
        done = self.run("run", operation, "--json", check=False, **env)
        document = json.loads(done.stdout)
        expected = run_exit(State(document["state"]))
        assert done.returncode == expected, f"run exited {done.returncode}: {done.stderr}"
        return document


def make_workspace(root: Path, base_url: str) -> Workspace:
    (root / "providers").mkdir(parents=True, exist_ok=True)
    doc = (ROOT / "providers" / "simulator.toml").read_text()
    doc = doc.replace('base_url = "http://127.0.0.1:8700"', f'base_url = "{base_url}"')
    doc += '\n[poll]\ninitial = "100ms"\ncap = "1s"\n'  # keep real-time tests short
    assert tomllib.loads(doc)["base_url"] == base_url
    (root / "providers" / "simulator.toml").write_text(doc)
    return Workspace(root=root, base_url=base_url)


def raw_bytes(*paths: Path) -> bytes:
    """Every byte under these files/folders (database, WAL, results, logs)."""
    chunks = []
    for path in paths:
        files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
        chunks += [p.read_bytes() for p in files]
    return b"".join(chunks)


def until_healthy(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 90) -> None:
    """Until `jobtrail serve` at `url` answers /healthz; fails at once if it exited."""

    def healthy() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"serve exited with {proc.returncode}: {log.read_text()}")
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=1) as resp:
                return bool(resp.status == 200)
        except OSError:
            return False

    until_true(healthy, timeout, lambda: f"serve healthy: {log.read_text()}")


@dataclass(frozen=True)
class Served:
    url: str
    log: Path  # serve's stdout and stderr (JSON log lines)
    proc: subprocess.Popen[bytes]


@contextlib.contextmanager
def serving(ws: Workspace, *args: str, **env: str) -> Iterator[Served]:
    """`jobtrail serve --port P ARGS` in `ws` (this checkout's code), healthy, until the block
    ends; then stopped with SIGTERM."""
    import jobtrail

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    src = str(Path(jobtrail.__file__).resolve().parents[1])
    code = "from jobtrail.cli.main import main; main()"
    log = ws.root / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", code, "serve", "--port", str(port), *args],
            stdout=out,
            stderr=out,
            env=ws.env(PYTHONPATH=src, **env),
            cwd=ws.root,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        until_healthy(url, proc, log)
        yield Served(url, log, proc)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def census_entries(db: Path) -> list[dict[str, Any]]:
    """The census.taken entries of the audit log of the ledger at `db`."""

    async def read() -> list[dict[str, Any]]:
        store = await open_store(str(db), create=False)
        try:
            rows = [json.loads(r.entry) for r in await store.audit_rows()]
        finally:
            await store.close()
        return [r for r in rows if r["kind"] == "census.taken"]

    return asyncio.run(read())


def faketime_library() -> str:
    """Debian's libfaketime, to LD_PRELOAD into a process whose clock a test fakes."""
    found = sorted(glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1"))
    if not found:  # CI installs it (.ci/run); a developer may not have it yet
        pytest.fail("libfaketime is missing: apt-get install -y faketime", pytrace=False)
    return found[0]


def faked_clock(stamp: Path, offset: str, *, monotonic: bool = True) -> dict[str, str]:
    """The environment that runs a process under libfaketime at `offset` ("+60s"), written
    to `stamp`, which the faked clock re-reads every second (write another offset there to
    step it). `monotonic=False`: the monotonic clock goes on, as when NTP steps a clock."""
    stamp.write_text(offset)
    env = {
        "LD_PRELOAD": faketime_library(),
        "FAKETIME_TIMESTAMP_FILE": str(stamp),
        "FAKETIME_CACHE_DURATION": "1",
    }
    if not monotonic:
        env["FAKETIME_DONT_FAKE_MONOTONIC"] = "1"
    return env
