"""Notices configured in the policy file's `[notify]` table, as an operator writes it: a
worker or `serve` told only by the file delivers a signed notice that a Standard Webhooks
verifier accepts with the secret the file refers to; `--notify` replaces the file's
endpoints; a literal secret or an unknown key stops the start with the key named, and the
notice waiting in the outbox is delivered once the file is mended. The secret reaches
neither the ledger's files nor any output."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from standardwebhooks import Webhook

from cliutil import Workspace, raw_bytes, serving
from waits import until_true

RAW = b"notify-config-signing-key-0123"
KEY = "whsec_" + base64.b64encode(RAW).decode()
KEY_BYTES = [KEY.encode(), KEY.removeprefix("whsec_").encode(), RAW]
OTHER_KEY = "whsec_" + base64.b64encode(b"the-environments-key-not-the-files").decode()
# drives its operation to needs_human: the create's answer is lost and a retry makes another job
NEEDS_HUMAN = {"account": "a", "_sim": {"drop_create_answer": True, "different_id_on_retry": True}}


class Receiver(ThreadingHTTPServer):
    raw: list[tuple[dict[str, str], bytes]]


class Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.raw.append((dict(self.headers), body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def receivers() -> Iterator[tuple[Receiver, Receiver]]:
    servers = (Receiver(("127.0.0.1", 0), Handler), Receiver(("127.0.0.1", 0), Handler))
    for server in servers:
        server.raw = []
        threading.Thread(target=server.serve_forever, daemon=True).start()
    yield servers
    for server in servers:
        server.shutdown()
        server.server_close()


def url(r: Receiver) -> str:
    return f"http://127.0.0.1:{r.server_address[1]}/notices"


def policy(ws: Workspace, notify: str) -> str:
    path = ws.root / "policy.toml"
    path.write_text(f'[kinds.agent]\nsubmit = "any"\n\n[notify]\n{notify}')
    return str(path)


def needing_a_person(ws: Workspace) -> str:
    return str(ws.json("submit", "simulator", "--body", json.dumps(NEEDS_HUMAN))["operation_id"])


def verified(r: Receiver) -> dict[str, object]:
    """The one notice `r` received, verified with KEY (raises if the signature is wrong)."""
    ((headers, body),) = r.raw
    document: dict[str, object] = Webhook(KEY).verify(body, headers)
    return document


def assert_no_secret(ws: Workspace, *more: Path) -> None:
    stored = raw_bytes(*ws.root.glob("jobtrail.db*"), *more)
    printed = "".join(ws.outputs).encode()
    for secret in KEY_BYTES:
        assert secret not in stored and secret not in printed


def test_a_worker_told_only_by_the_file_sends_a_notice_signed_with_its_secret(
    ws: Workspace, receivers: tuple[Receiver, Receiver]
) -> None:
    """No flag: `[notify]` names the endpoint, the secret's variable and the dashboard, and
    wins over JOBTRAIL_NOTIFY, JOBTRAIL_NOTIFY_SECRET and JOBTRAIL_DASHBOARD_URL; the notice
    verifies with the file's secret and links to the file's dashboard."""
    pager, elsewhere = receivers
    file = policy(
        ws,
        f'endpoints = ["{url(pager)}"]\nsecret = {{ env = "PAGER_SECRET" }}\n'
        'dashboard_url = "https://ops.example/jobtrail"\ntimeout = "5s"\n',
    )
    op = needing_a_person(ws)
    environment = {
        "JOBTRAIL_NOTIFY": url(elsewhere),
        "JOBTRAIL_NOTIFY_SECRET": OTHER_KEY,
        "JOBTRAIL_DASHBOARD_URL": "https://elsewhere.example",
    }
    ws.run("--policy", file, "worker", "--until-idle", PAGER_SECRET=KEY, **environment)
    assert elsewhere.raw == []
    document = verified(pager)
    data = document["data"]
    assert isinstance(data, dict) and document["type"] == "operation.needs_human"
    assert data["operation_id"] == op
    assert data["dashboard_url"] == f"https://ops.example/jobtrail/operations/{op}"
    assert_no_secret(ws)


def test_notify_flags_replace_the_files_endpoints(
    ws: Workspace, receivers: tuple[Receiver, Receiver]
) -> None:
    """`--notify B` with `[notify] endpoints = [A]`: B alone is posted to, still signed with
    the file's secret (the flag replaces endpoints, nothing else)."""
    filed, flagged = receivers
    secret_file = ws.root / "notify-secret"
    secret_file.write_text(KEY + "\n")
    file = policy(ws, f'endpoints = ["{url(filed)}"]\nsecret = {{ file = "{secret_file}" }}\n')
    needing_a_person(ws)
    ws.run("worker", "--until-idle", "--notify", url(flagged), JOBTRAIL_POLICY=file)
    assert verified(flagged)["type"] == "operation.needs_human"
    assert filed.raw == []
    assert_no_secret(ws)


@pytest.mark.parametrize(
    ("mistake", "named"),
    [
        (f'secret = "{KEY}"\n', "[notify] secret must name where the signing secret is kept"),
        (f'signing_key = "{KEY}"\n', "[notify] has unknown key signing_key"),
        ('secret = { env = "PAGER_SECRET_UNSET" }\n', "PAGER_SECRET_UNSET, which is not set"),
    ],
)
def test_a_bad_file_stops_the_start_naming_the_key_and_loses_no_notice(
    ws: Workspace, receivers: tuple[Receiver, Receiver], mistake: str, named: str
) -> None:
    """A literal secret, an unknown key or an unset variable: `worker` and `serve` refuse to
    start, naming the key and not repeating the secret; the notice already in the outbox is
    delivered, signed, by the first worker started with the file mended."""
    pager, _ = receivers
    needing_a_person(ws)
    ws.run("worker", "--until-idle")  # no endpoint anywhere: the notice waits in the outbox
    bad = policy(ws, f'endpoints = ["{url(pager)}"]\n{mistake}')
    refused = ws.run("worker", "--until-idle", check=False, JOBTRAIL_POLICY=bad)
    assert refused.returncode == 1 and named in refused.stderr, refused.stderr
    assert "policy.toml" in refused.stderr
    served = ws.run("serve", "--port", "0", check=False, JOBTRAIL_POLICY=bad)
    assert served.returncode == 1 and named in served.stderr, served.stderr
    assert pager.raw == []
    mended = policy(ws, f'endpoints = ["{url(pager)}"]\nsecret = {{ env = "PAGER_SECRET" }}\n')
    ws.run("worker", "--until-idle", JOBTRAIL_POLICY=mended, PAGER_SECRET=KEY)
    assert verified(pager)["type"] == "operation.needs_human"
    assert_no_secret(ws)


def test_serve_told_only_by_the_file_delivers_a_signed_notice(
    ws: Workspace, receivers: tuple[Receiver, Receiver]
) -> None:
    """`jobtrail serve` with JOBTRAIL_POLICY whose `[notify]` names a secret file: an
    operation reaching needs_human under its worker is posted, signed with that secret; the
    secret is in neither the ledger's files nor serve's log."""
    pager, _ = receivers
    secret_file = ws.root / "notify-secret"
    secret_file.write_text(KEY)
    file = policy(ws, f'endpoints = ["{url(pager)}"]\nsecret = {{ file = "{secret_file}" }}\n')
    with serving(ws, JOBTRAIL_POLICY=file) as served:
        log = served.log
        op = needing_a_person(ws)
        until_true(lambda: bool(pager.raw), 60, lambda: f"a notice posted: {log.read_text()}")
        data = verified(pager)["data"]
        assert isinstance(data, dict) and data["operation_id"] == op
    assert_no_secret(ws, log)


def test_notify_test_signs_with_the_files_secret(
    ws: Workspace, receivers: tuple[Receiver, Receiver]
) -> None:
    """`jobtrail notify test URL` signs its sample with the secret `[notify]` refers to,
    as `serve` would, not with JOBTRAIL_NOTIFY_SECRET."""
    pager, _ = receivers
    file = policy(ws, 'secret = { env = "PAGER_SECRET" }\n')
    done = ws.run(
        "notify", "test", url(pager),
        JOBTRAIL_POLICY=file, PAGER_SECRET=KEY, JOBTRAIL_NOTIFY_SECRET=OTHER_KEY,
    )  # fmt: skip
    assert json.loads(done.stdout)["signed"] is True
    assert verified(pager)["type"] == "operation.needs_human"
    assert_no_secret(ws)
