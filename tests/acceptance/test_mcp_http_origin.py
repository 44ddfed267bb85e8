"""MCP over HTTP refuses a browser page of an origin it does not allow (issue 36; the MCP
specification's Streamable HTTP transport, 2025-11-25: a present, invalid Origin MUST get
403), on both endpoints: `jobtrail serve` and `jobtrail mcp --http`, as subprocesses over
loopback. With a valid agent token: a foreign Origin gets 403; an origin given with
`--allow-origin` (or JOBTRAIL_ALLOW_ORIGINS), the server's own origin, and a request with no
Origin at all are answered; the Host header is never judged (a reverse proxy's is fine)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from test_mcp_http import AGENTS, ALPHA, _free_port, envelope

from jobtrail.simulator import SimulatorThread

from cliutil import JOBTRAIL, until_healthy
from mcptasks import SECRET, provider_folder
from waits import until_true

ALLOWED = "https://console.example.com"


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[SimulatorThread]:
    with SimulatorThread(token=SECRET) as simulator:
        provider_folder(tmp_path / "providers", simulator.base_url)
        yield simulator


def post(url: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, str]:
    """The status and the body's text of one POST to /mcp (JSON, or an event stream)."""
    request = urllib.request.Request(
        f"{url}/mcp",
        data=json.dumps(body).encode(),
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        | headers,
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@contextmanager
def endpoint(tmp_path: Path, which: str) -> Iterator[str]:
    """`serve` (allowed origin by option) or `mcp --http` (by environment); yields its URL."""
    env = {
        **os.environ,
        "JOBTRAIL_PROVIDERS": str(tmp_path / "providers"),
        "REPORTS_API_TOKEN": SECRET,
        "JOBTRAIL_AGENT_TOKENS": AGENTS,
    }
    log = tmp_path / f"{which}.log"
    command = [JOBTRAIL, "--db", str(tmp_path / "l.db"), "--data-dir", str(tmp_path / "data")]
    if which == "serve":
        port = _free_port()
        command += ["serve", "--port", str(port), "--allow-origin", ALLOWED]
    else:
        env["JOBTRAIL_ALLOW_ORIGINS"] = f"{ALLOWED} http://other.example:8443"
        command += ["mcp", "--http", "127.0.0.1:0"]
    with open(log, "wb") as stderr:
        proc = subprocess.Popen(command, stderr=stderr, env=env, cwd=tmp_path)
    try:
        if which == "serve":
            url = f"http://127.0.0.1:{port}"
            until_healthy(url, proc, log)
        else:
            until_true(lambda: "serving http://" in log.read_text(), 30, lambda: log.read_text())
            url = log.read_text().split("serving ", 1)[1].split()[0].removesuffix("/mcp")
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)


@pytest.mark.parametrize("which", ["serve", "mcp-http"])
def test_a_foreign_origin_is_refused_with_403_even_with_a_valid_token(
    tmp_path: Path, sim: SimulatorThread, which: str
) -> None:
    """Only the Origin decides the 403; the token still decides the rest (401 without one)."""
    listing = envelope("tools/list", {})
    token = {"Authorization": f"Bearer {ALPHA}"}
    with endpoint(tmp_path, which) as url:
        own = url.removeprefix("http://")
        answers = {
            "foreign": post(url, listing, token | {"Origin": "http://evil.example"}),
            "foreign, no token": post(url, listing, {"Origin": "http://evil.example"}),
            "null": post(url, listing, token | {"Origin": "null"}),
            "allowed": post(url, listing, token | {"Origin": ALLOWED}),
            "allowed, trailing slash": post(url, listing, token | {"Origin": ALLOWED + "/"}),
            "own": post(url, listing, token | {"Origin": f"http://{own}"}),
            "none": post(url, listing, token),
            "none, no token": post(url, listing, {}),
            "proxy host": post(url, listing, token | {"Host": "jobs.example.com"}),
            "proxy host, its origin": post(
                url,
                listing,
                token | {"Host": "jobs.example.com", "Origin": "https://jobs.example.com"},
            ),
        }
    codes = {name: status for name, (status, _) in answers.items()}
    assert codes == {
        "foreign": 403,
        "foreign, no token": 403,
        "null": 403,
        "allowed": 200,
        "allowed, trailing slash": 200,
        "own": 200,
        "none": 200,
        "none, no token": 401,
        "proxy host": 200,
        "proxy host, its origin": 200,
    }
    assert "--allow-origin" in json.loads(answers["foreign"][1])["error"]
    assert "submit_job" in answers["allowed"][1]  # answered: the tools are listed


def test_an_origin_that_is_not_one_is_refused_at_start(tmp_path: Path) -> None:
    """`--allow-origin` takes scheme://host[:port]; anything else stops the command, named."""
    command = [JOBTRAIL, "--db", str(tmp_path / "l.db"), "mcp", "--http", "127.0.0.1:0"]
    done = subprocess.run(
        [*command, "--allow-origin", "console.example.com/app"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "--allow-origin takes an origin, scheme://host[:port]" in done.stderr
