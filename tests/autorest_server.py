"""The real AutoRest test server (npm `@microsoft.azure/autorest.testserver`, pinned), the
server Azure's own SDK generators are tested against: installed by the tests from the npm
registry into `.cache/` at the repository root (git-ignored), started on 127.0.0.1 and
stopped afterwards.

Its CLI listens on every interface, so `autorest/loopback.js` is preloaded into it to bind
127.0.0.1 (and to print the port it got). Node and npm are Debian's (`apt-get install
nodejs npm`, as `.ci/run` does): never a CDN or a prebuilt download. Without them the tests
are skipped with a loud reason, or fail under JOBTRAIL_REQUIRE_AUTOREST=1 (as in CI).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from wire import WireProxy

PACKAGE = "@microsoft.azure/autorest.testserver"
VERSION = "3.3.51"
ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / f"autorest.testserver-{VERSION}"
SHIM = Path(__file__).resolve().parent / "autorest" / "loopback.js"
MARK = "JOBTRAIL-LOOPBACK "


def package_dir() -> Path:
    return CACHE / "node_modules" / "@microsoft.azure" / "autorest.testserver"


def _problem() -> str | None:
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed (apt-get install -y nodejs npm)"
    return None


def require_autorest() -> None:
    """Skip (fail, under JOBTRAIL_REQUIRE_AUTOREST=1) when Node or npm is missing."""
    problem = _problem()
    if problem is None:
        return
    message = f"the AutoRest test server cannot run: {problem}"
    if os.environ.get("JOBTRAIL_REQUIRE_AUTOREST") == "1":
        pytest.fail(f"{message}; JOBTRAIL_REQUIRE_AUTOREST=1 makes this a failure", pytrace=False)
    pytest.skip(message)


def _installed() -> bool:
    manifest = package_dir() / "package.json"
    if not manifest.is_file():
        return False
    return bool(json.loads(manifest.read_text(encoding="utf-8")).get("version") == VERSION)


def install() -> Path:
    """The pinned package, installed once into the cache (a lock keeps two test runs from
    installing it at the same time). Its scripts are not run: it ships built."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _installed():
            (CACHE / "package.json").write_text('{"private": true}\n', encoding="utf-8")
            done = subprocess.run(
                [
                    "npm",
                    "install",
                    "--prefix",
                    str(CACHE),
                    "--no-audit",
                    "--no-fund",
                    "--ignore-scripts",
                    "--save-exact",
                    f"{PACKAGE}@{VERSION}",
                ],
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
            if done.returncode != 0 or not _installed():
                raise RuntimeError(
                    f"npm could not install {PACKAGE}@{VERSION}:\n{done.stdout}\n{done.stderr}"
                )
    return package_dir()


@dataclass(frozen=True)
class Server:
    origin: str  # http://127.0.0.1:PORT
    port: int
    package: Path  # the installed package (legacy/routes/lros.js, swagger/lro.json)
    log: Path


@contextmanager
def serving(workdir: Path) -> Iterator[Server]:
    """The test server on 127.0.0.1 on a port of the OS's choosing, until the block ends."""
    package = install()
    log = workdir / "autorest-testserver.log"
    cli = package / "dist" / "cli" / "cli.js"
    command = ["node", "--require", str(SHIM), str(cli), "run", "--port=0"]
    command.append(f"--coverageDirectory={workdir / 'coverage'}")
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=workdir, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    try:
        host, port = _wait_for_port(process, log)
        if host != "127.0.0.1":
            raise RuntimeError(f"the test server listens on {host}, not on loopback")
        # reached through the wire check's recording proxy (tests/wire.py); `port` is its own
        with WireProxy(f"http://127.0.0.1:{port}") as proxy:
            yield Server(origin=proxy.base_url, port=port, package=package, log=log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def _wait_for_port(process: subprocess.Popen[bytes], log: Path) -> tuple[str, int]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith(MARK):
                host, port = line.removeprefix(MARK).split()
                return host, int(port)
        if process.poll() is not None:
            break
        time.sleep(0.1)
    text = log.read_text(encoding="utf-8", errors="replace")[-4000:]
    raise RuntimeError(f"the AutoRest test server did not start:\n{text}")


def listening_addresses(port: int) -> set[str]:
    """The local addresses (hex, as /proc/net/tcp* writes them) with a socket listening on
    `port`: how a test proves the server listens on loopback only."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text(encoding="ascii").splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            address, hex_port = fields[1].rsplit(":", 1)
            if int(hex_port, 16) == port and fields[3] == "0A":  # 0A: LISTEN
                found.add(address)
    return found
