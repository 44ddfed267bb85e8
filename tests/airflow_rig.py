"""A real Apache Airflow 3 server for the tests: `apache-airflow` (pinned) installed once
into its own virtual environment under .cache/ (git-ignored, reused while it holds that
version), then `airflow standalone` (API server, scheduler, DAG processor, triggerer) on
127.0.0.1 and a free port, with SQLite as its metadata database and AIRFLOW_HOME in a
temporary folder, serving the DAGs of tests/airflow/.

Authentication is Airflow's simple auth manager with one admin user whose password the rig
writes (a fresh one per session) into the passwords file; the JWT signing secret is set by
the rig too, so a test can mint tokens that expire when it wants (`mint`).

When Airflow cannot be installed or started, the tests that need it are skipped with a loud
reason, or fail under JOBTRAIL_REQUIRE_AIRFLOW=1 (as in CI).
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import hmac
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from wire import WireProxy

VERSION = "3.3.2"  # apache-airflow, pinned: the REST API the profile was written against
ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / f"airflow-{VERSION}"
DAGS = Path(__file__).resolve().parent / "airflow"
USER = "jobtrail"
INSTALL_TIMEOUT = 20 * 60
START_TIMEOUT = 180
SKIP_WORDS = "Airflow tests cannot run"


def required() -> bool:
    return os.environ.get("JOBTRAIL_REQUIRE_AIRFLOW") == "1"


def give_up(why: str) -> None:
    message = f"{SKIP_WORDS}: {why}"
    if required():
        pytest.fail(f"{message}; JOBTRAIL_REQUIRE_AIRFLOW=1 makes this a failure", pytrace=False)
    pytest.skip(message)


def installed() -> Path:
    """The `airflow` program of the cached installation, installing it first if needed."""
    airflow = CACHE / "venv" / "bin" / "airflow"
    marker = CACHE / "installed"
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    with (CACHE.parent / "airflow.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one installer at a time (another pytest, say)
        if marker.is_file() and marker.read_text().strip() == VERSION and airflow.is_file():
            return airflow
        shutil.rmtree(CACHE, ignore_errors=True)
        CACHE.mkdir(parents=True)
        log = CACHE / "install.log"
        with log.open("w") as out:
            steps = [
                [sys.executable, "-m", "venv", str(CACHE / "venv")],
                [
                    str(CACHE / "venv" / "bin" / "python"),
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                    f"apache-airflow=={VERSION}",
                ],
            ]
            for step in steps:
                try:
                    done = subprocess.run(
                        step, stdout=out, stderr=subprocess.STDOUT, timeout=INSTALL_TIMEOUT
                    )
                except subprocess.TimeoutExpired:
                    give_up(f"installing apache-airflow=={VERSION} took over {INSTALL_TIMEOUT}s")
                if done.returncode != 0:
                    tail = log.read_text(errors="replace")[-1500:]
                    give_up(f"installing apache-airflow=={VERSION} failed ({log}):\n{tail}")
        marker.write_text(VERSION)
    return airflow


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Airflow:
    """A running Airflow server: its URL, its admin's password and its JWT secret."""

    base_url: str
    password: str
    jwt_secret: str
    home: Path
    python: Path  # the Airflow installation's interpreter (for token commands)
    started_in: float  # seconds from start to ready
    warm_up_runs: int = 0  # runs of jobtrail_ok it took before one succeeded

    def token(self) -> str:
        """A JWT from Airflow's own POST /auth/token."""
        answer = self.request(
            "POST", "/auth/token", {"username": USER, "password": self.password}, token=None
        )
        token: str = answer["access_token"]
        return token

    def mint(self, expires_in: float) -> str:
        """A JWT signed with the server's secret that expires `expires_in` seconds from now
        (negative: already expired), as Airflow's own tokens are."""
        return mint(self.jwt_secret, expires_in)

    def request(self, method: str, path: str, body: Any = None, *, token: str | None = "") -> Any:
        """A call to the REST API (a fresh JWT unless `token` is given; None: no header)."""
        headers = {"Content-Type": "application/json"}
        if token == "":
            token = self.token()
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.base_url + path, data=data, method=method, headers=headers
        )
        with urllib.request.urlopen(req, timeout=30) as answer:
            return json.loads(answer.read() or b"null")

    def runs(self, dag_id: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.request("GET", f"/api/v2/dags/{dag_id}/dagRuns")[
            "dag_runs"
        ]
        return found

    def run(self, dag_id: str, run_id: str) -> dict[str, Any]:
        found: dict[str, Any] = self.request("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}")
        return found


def mint(secret: str, expires_in: float) -> str:
    """An HS512 JWT with the claims Airflow's simple auth manager puts in its own."""
    now = int(time.time())

    def part(value: dict[str, Any]) -> str:
        raw = json.dumps(value, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    header = part({"alg": "HS512", "kid": "not-used", "typ": "JWT"})
    claims = {
        "sub": USER,
        "role": "admin",
        "teams": [],
        "jti": uuid.uuid4().hex,
        "aud": "apache-airflow",
        "nbf": now - 300,
        "iat": now - 300,
        "exp": int(now + expires_in),
    }
    signing = f"{header}.{part(claims)}"
    signature = hmac.new(secret.encode(), signing.encode(), hashlib.sha512).digest()
    return f"{signing}.{base64.urlsafe_b64encode(signature).rstrip(b'=').decode()}"


def _environment(
    home: Path, port: int, password_file: Path, secret: str, airflow: Path
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env.update(
        {
            "PATH": f"{airflow.parent}{os.pathsep}{env.get('PATH', '')}",
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(home / "dags"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USER}:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(password_file),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(port),
            "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{port}",
            "AIRFLOW__API_AUTH__JWT_SECRET": secret,
            "AIRFLOW__API_AUTH__JWT_LEEWAY": "0",
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
        }
    )
    return env


@contextmanager
def airflow_server(home: Path) -> Iterator[Airflow]:
    """Install (once) and start Airflow; stop it (its whole process group) afterwards."""
    airflow = installed()
    (home / "dags").mkdir(parents=True)
    shutil.copy(DAGS / "jobtrail_dags.py", home / "dags" / "jobtrail_dags.py")
    password, secret = secrets.token_urlsafe(18), secrets.token_urlsafe(48)
    password_file = home / "passwords.json"
    password_file.write_text(json.dumps({USER: password}))
    port = free_port()
    log = (home / "standalone.log").open("w")
    started = time.monotonic()
    process = subprocess.Popen(
        [str(airflow), "standalone"],
        env=_environment(home, port, password_file, secret, airflow),
        cwd=home,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: stopped whole, by its id
    )
    server = Airflow(
        base_url=f"http://127.0.0.1:{port}",
        password=password,
        jwt_secret=secret,
        home=home,
        python=airflow.parent / "python",
        started_in=0.0,
    )
    try:
        _wait_ready(server, process, home / "standalone.log")
        server.warm_up_runs = _warm_up(server, home / "standalone.log")
        server.started_in = time.monotonic() - started
        # from here on reached through the wire check's recording proxy (tests/wire.py)
        with WireProxy(server.base_url) as wire:
            server.base_url = wire.base_url
            yield server
    finally:
        _stop(process)
        log.close()


def _wait_ready(server: Airflow, process: subprocess.Popen[bytes], log: Path) -> None:
    """Until the API answers, every component is healthy and the test DAGs are parsed."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            give_up(f"airflow standalone exited ({process.returncode}):\n{_tail(log)}")
        try:
            health = server.request("GET", "/api/v2/monitor/health", token=None)
            healthy = all(
                part.get("status") == "healthy"
                for part in health.values()
                if isinstance(part, dict)
            )
            if healthy:
                dags = {d["dag_id"] for d in server.request("GET", "/api/v2/dags")["dags"]}
                if {"jobtrail_ok", "jobtrail_fail", "jobtrail_slow", "jobtrail_wait"} <= dags:
                    return
        except (OSError, urllib.error.URLError, ValueError, KeyError):
            pass
        time.sleep(0.5)
    give_up(f"airflow standalone was not ready within {START_TIMEOUT}s:\n{_tail(log)}")


def _warm_up(server: Airflow, log: Path) -> int:
    """Run `jobtrail_ok` once to its end before any test: the first run of a fresh server
    has been seen to fail (its scheduler or executor still starting), and a test must not
    take that for jobtrail's doing. Up to three tries; the tests count runs relative to
    what exists when they start."""
    for attempt in range(3):
        run_id = f"warm-up-{attempt}"
        server.request(
            "POST", "/api/v2/dags/jobtrail_ok/dagRuns", {"dag_run_id": run_id, "logical_date": None}
        )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            state = server.run("jobtrail_ok", run_id)["state"]
            if state == "success":
                return attempt + 1
            if state == "failed":
                break
            time.sleep(0.5)
    give_up(f"no run of jobtrail_ok succeeded on the fresh server:\n{_tail(log)}")


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-2000:] if log.is_file() else "(no log)"


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to every process of the server's session (its scheduler, API server and the
    task runners, which Airflow puts in process groups of their own), SIGKILL to what is
    left after 30 s."""
    session = process.pid  # start_new_session: the session's id is the server's pid
    for pid in _session(session):
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    with suppress(subprocess.TimeoutExpired):
        process.wait(timeout=30)
    deadline = time.monotonic() + 10
    while (left := _session(session)) and time.monotonic() < deadline:
        for pid in left:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)
    process.wait()


def _session(session: int) -> list[int]:
    """The live processes whose session is `session` (/proc/PID/stat: state, session)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # it ended meanwhile
        fields = stat.rpartition(")")[2].split()
        if len(fields) > 3 and fields[0] != "Z" and int(fields[3]) == session:  # Z: ended
            found.append(int(entry.name))
    return found
