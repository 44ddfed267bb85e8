"""SIGKILL between a transition and the delivery of its notice: the notice was committed
with the transition, and a worker started afterwards (`jobtrail worker --notify URL`)
delivers it, with the event id it was written with; killed while posting, the notice is
posted again under the same id once the dead process's claim runs out."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from standardwebhooks import Webhook

from jobtrail.simulator import SimulatorThread
from jobtrail.store.machine_clock import machine_wall

from cliutil import Workspace
from waits import until_true

NOTIFYPOINT = str(Path(__file__).resolve().parents[1] / "notifypoint.py")


class Receiver(ThreadingHTTPServer):
    got: list[tuple[str, dict[str, object]]]
    raw: list[tuple[dict[str, str], bytes]]
    kill: int | None = None  # a pid to SIGKILL on the first post, before answering


class Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.got.append((self.headers["webhook-id"], json.loads(body)))
        self.server.raw.append((dict(self.headers), body))
        if self.server.kill is not None:
            pid, self.server.kill = self.server.kill, None
            os.kill(pid, signal.SIGKILL)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver(("127.0.0.1", 0), Handler)
    server.got, server.raw = [], []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def url(r: Receiver) -> str:
    return f"http://127.0.0.1:{r.server_address[1]}/notices"


def doomed(ws: Workspace, point: str, receiver: Receiver) -> str:
    proc = subprocess.Popen(
        [sys.executable, NOTIFYPOINT, str(ws.db), str(ws.root / "data"),
         str(ws.root / "providers" / "simulator.toml"), point, url(receiver)],
        env=ws.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    receiver.kill = proc.pid if point == "in_delivery" else None
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL, err
    return out.strip()


def stored_event(ws: Workspace, op: str) -> tuple[str, str | None]:
    """The event id of the operation's one notice, and when it is due (None: delivered)."""
    import sqlite3

    with sqlite3.connect(ws.db) as db:
        ((event, due),) = db.execute(
            "SELECT event_id, due_at FROM notices WHERE operation_id = ?", (op,)
        ).fetchall()
    return event, due


@pytest.mark.parametrize("point", ["after_transition", "in_delivery"])
def test_a_notice_outlives_a_sigkill(
    ws: Workspace, simulator: SimulatorThread, receiver: Receiver, point: str
) -> None:
    """Killed after the needs_human transition (or in the middle of posting its notice): a
    worker started afterwards posts it, with the stored event id, and marks it delivered."""
    op = doomed(ws, point, receiver)
    assert ws.json("status", op)["state"] == "needs_human"
    event, due = stored_event(ws, op)
    assert due is not None
    if point == "in_delivery":
        assert [e for e, _ in receiver.got] == [event]  # posted, never recorded
        # the dead process's claim (1 s) must run out before anyone may post it again, on
        # the ledger's clock (the machine's, which trails this process's by up to a second)
        claimed = datetime.fromisoformat(due)
        until_true(lambda: claimed <= machine_wall(), 10, "claim over")
    ws.run("worker", "--until-idle", "--notify", url(receiver))
    assert {e for e, _ in receiver.got} == {event}
    assert receiver.got[-1][1]["data"]["operation_id"] == op  # type: ignore[index]
    assert stored_event(ws, op) == (event, None)


KEY = "whsec_" + "c2VjcmV0LXNpZ25pbmcta2V5LWZvci10ZXN0cw=="


def test_notify_test_sends_a_signed_sample(ws: Workspace, receiver: Receiver) -> None:
    """`jobtrail notify test URL` posts one sample a Standard Webhooks verifier accepts;
    a URL that is not one is refused with a sentence naming it."""
    done = ws.run("notify", "test", url(receiver), JOBTRAIL_NOTIFY_SECRET=KEY)
    assert json.loads(done.stdout) == {"outcome": "delivered", "detail": "HTTP 204", "signed": True}
    ((headers, body),) = receiver.raw
    document = Webhook(KEY).verify(body, headers)
    assert document["type"] == "operation.needs_human" and KEY not in done.stdout + done.stderr
    bad = ws.run("notify", "test", "ftp://example", check=False)
    assert bad.returncode == 1 and "URL" in bad.stderr and "http(s)" in bad.stderr
