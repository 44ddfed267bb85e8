"""A ledger URL's password never shows: not in the worker's banner, `serve`'s JSON logs,
`status` or `list`, nor in the errors of a ledger that cannot be reached."""

from __future__ import annotations

import socket
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from subprocess import PIPE

import pytest

from cliutil import JOBTRAIL, Workspace
from stores import migrated_ledger
from waits import until_true

PASSWORD = "SECRETPW"
pytestmark = pytest.mark.postgres


def with_password(url: str) -> str:
    """The test server's URL with a password in it (trust auth accepts any)."""
    scheme, _, rest = url.partition("://")
    userinfo, at, host = rest.partition("@")
    assert at and ":" not in userinfo, "JOBTRAIL_TEST_PG should name a user and no password"
    return f"{scheme}://{userinfo}:{PASSWORD}@{host}"


@pytest.fixture
async def db_url(tmp_path: Path) -> Iterator[str]:
    async with migrated_ledger("postgres", tmp_path) as db:
        yield with_password(db.url)


def start(ws: Workspace, db: str, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [JOBTRAIL, *args], cwd=ws.root, env=ws.env(JOBTRAIL_DB=db), stdout=PIPE, stderr=PIPE
    )


def finish(process: subprocess.Popen[bytes]) -> tuple[int, str]:
    stdout, stderr = process.communicate(timeout=120)
    return process.returncode, (stdout + stderr).decode()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def serve_until_healthy(ws: Workspace, db: str) -> tuple[int, str]:
    """Start `serve`, wait (bounded) for /healthz to answer, stop it with SIGTERM."""
    port = free_port()
    process = start(ws, db, "serve", "--port", str(port))

    def answered_or_exited() -> bool:
        if process.poll() is not None:
            return True
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1):
                return True
        except OSError:
            return False

    try:
        until_true(answered_or_exited, 90, "serve answered /healthz or exited")
    finally:
        process.terminate()
    return finish(process)


def test_a_reachable_ledgers_password_is_never_shown(ws: Workspace, db_url: str) -> None:
    """worker, serve, status and list against a postgresql:// URL with a password."""
    ws.run("submit", "simulator", "--body", '{"account": "a"}', "--key", "k", JOBTRAIL_DB=db_url)
    runs = [
        start(ws, db_url, "worker", "--until-idle"),
        start(ws, db_url, "list"),
        start(ws, db_url, "status", "op_does_not_exist"),
    ]
    outputs = [finish(process) for process in runs]
    (worker_code, banner), (list_code, _), (status_code, missing) = outputs
    assert (worker_code, list_code, status_code) == (0, 0, 1)
    assert "postgres:[redacted]@" in banner and "no operation" in missing
    serve_code, logs = serve_until_healthy(ws, db_url)
    assert serve_code == 0 and '"db": "postgresql://postgres:[redacted]@' in logs, logs
    for _, output in [*outputs, (serve_code, logs)]:
        assert PASSWORD not in output


def test_an_unreachable_ledgers_password_is_never_shown(ws: Workspace) -> None:
    """Connection failures name where the ledger is, never its password."""
    for url in (
        f"postgresql://postgres:{PASSWORD}@127.0.0.1:1/postgres",
        f"postgresql://127.0.0.1:1/postgres?user=postgres&password={PASSWORD}",
    ):
        runs = [
            start(ws, url, "worker", "--until-idle"),
            start(ws, url, "status", "op_x"),
            start(ws, url, "list"),
            start(ws, url, "serve", "--port", str(free_port())),
        ]
        for process in runs:
            code, output = finish(process)
            assert code == 1 and "127.0.0.1:1" in output, output
            assert PASSWORD not in output, output


def test_a_password_with_an_unencoded_at_is_never_shown(ws: Workspace, db_url: str) -> None:
    """`postgresql://user:pa@ss@host/db`: libpq would end the password at the first `@` and
    show the rest as a host name. The URL is refused in a sentence showing none of it; the
    same password written with %40 opens the ledger, and is not shown either."""
    head, tail = "hunter2x", "Wh1sperLongPart"
    for url in (
        f"postgresql://postgres:{head}@{tail}@127.0.0.1:1/postgres",
        db_url.replace(PASSWORD, f"{head}@{tail}"),
    ):
        for process in [start(ws, url, "status", "op_x"), start(ws, url, "worker", "--until-idle")]:
            code, output = finish(process)
            assert code == 1 and "unencoded '@'" in output and "%40" in output, output
            assert head not in output and tail not in output, output
    encoded = db_url.replace(PASSWORD, f"{head}%40{tail}")
    code, output = finish(start(ws, encoded, "list"))
    assert code == 0, output
    assert head not in output and tail not in output, output
