"""`jobtrail serve` as a user runs it: a subprocess with the worker and the webhook receiver,
a SQLite ledger in a temporary folder, and the provider simulator over loopback HTTP sending
(and the test forging) signed Standard Webhooks events.

Refused deliveries write nothing: no observation and no audit entry (only a JSON log line).
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import closing
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest

import jobtrail
from jobtrail.core.model import AttemptKind, Observation, Operation
from jobtrail.core.states import Evidence, State
from jobtrail.ledger import Ledger
from jobtrail.providers.file.config import load_provider_file
from jobtrail.simulator import SimulatorThread, WebhookSigner, new_webhook_secret
from jobtrail.store import open_store

from cliutil import until_healthy
from waits import until_true_async

REPO = Path(__file__).resolve().parents[2]
PROVIDER = "simulator-webhooks"
SECRET = new_webhook_secret()
HMAC = "simulator-hmac"  # the same provider, signing with HMAC under its own header names
HMAC_SECRET = "hmac-" + secrets.token_hex(16)
TOKEN = "tok-" + secrets.token_hex(16)
TOLERANCE = 2  # seconds; short, so a replay can be shown refused without a long wait
QUIET = {"duration_polls": 5, "webhooks": "none"}  # a job that sends no events by itself


@dataclass
class Stack:
    url: str
    sim: SimulatorThread
    db: str
    providers: Path
    log: Path
    proc: subprocess.Popen[bytes]
    sent_signatures: list[str]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _provider_files(folder: Path, sim_url: str) -> None:
    """The repository's provider files, pointed at the simulator; polls ten minutes apart,
    so within a test only a webhook can make the worker read a status."""
    default_url = 'base_url = "http://127.0.0.1:8700"'
    text = (REPO / "providers" / f"{PROVIDER}.toml").read_text()
    text = text.replace(default_url, f'base_url = "{sim_url}"')
    text = text.replace('tolerance = "5m"', f'tolerance = "{TOLERANCE}s"')
    (folder / f"{PROVIDER}.toml").write_text(text + '\n[poll]\ninitial = "10m"\ncap = "10m"\n')
    hmac = text.replace(f'name = "{PROVIDER}"', f'name = "{HMAC}"').replace(
        'signing = "standard"',
        'signing = "hmac"\nsignature_header = "X-Sim-Signature"\ntimestamp_header = "X-Sim-Time"',
    )
    hmac = hmac.replace("REPORTS_WEBHOOK_SECRET", "REPORTS_HMAC_SECRET")
    (folder / f"{HMAC}.toml").write_text(hmac + '\n[poll]\ninitial = "10m"\ncap = "10m"\n')
    plain = (REPO / "providers" / "simulator.toml").read_text()
    (folder / "plain.toml").write_text(plain.replace(default_url, f'base_url = "{sim_url}"'))


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    tmp = tmp_path_factory.mktemp("serve")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    with SimulatorThread(
        token=TOKEN, webhook_url=f"{url}/webhooks/{PROVIDER}", webhook_secret=SECRET
    ) as sim:
        providers = tmp / "providers"
        providers.mkdir()
        _provider_files(providers, sim.base_url)
        db, log = str(tmp / "ledger.db"), tmp / "serve.log"
        src = str(Path(jobtrail.__file__).resolve().parents[1])
        secrets_env = {
            "REPORTS_API_TOKEN": TOKEN,
            "REPORTS_WEBHOOK_SECRET": SECRET,
            "REPORTS_HMAC_SECRET": HMAC_SECRET,
        }
        env = {**os.environ, **secrets_env, "PYTHONPATH": src, "JOBTRAIL_PROVIDERS": str(providers)}
        code = "from jobtrail.cli.main import main; main()"
        command = [sys.executable, "-c", code, "--db", db, "serve", "--port", str(port)]
        with open(log, "wb") as stderr:
            proc = subprocess.Popen(
                [*command, "--worker-id", "serve-test"], stderr=stderr, env=env, cwd=tmp
            )
        try:
            until_healthy(url, proc, log)
            yield Stack(url, sim, db, providers, log, proc, [])
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)


@pytest.fixture
async def ledger(stack: Stack) -> AsyncIterator[Ledger]:
    store = await open_store(stack.db)
    try:
        yield Ledger(store)
    finally:
        await store.close()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def accepted_op(
    ledger: Ledger, stack: Stack, sim_faults: dict[str, Any], provider: str = PROVIDER
) -> Operation:
    """An operation that the served worker created remotely and released."""
    spec = load_provider_file(stack.providers / f"{provider}.toml")
    body = {"account": secrets.token_hex(4), "_sim": sim_faults}
    op = await ledger.submit(spec, body, actor="test")

    async def created() -> bool:
        current = await ledger.get(op.operation_id)
        return current.remote_job_id is not None and current.lease_owner is None

    await until_true_async(created, 15, "created")
    return await ledger.get(op.operation_id)


async def deliver(
    http: aiohttp.ClientSession,
    stack: Stack,
    headers: dict[str, str],
    body: bytes,
    provider: str = PROVIDER,
) -> tuple[int, dict[str, Any]]:
    stack.sent_signatures.extend(v for k, v in headers.items() if "signature" in k.lower())
    async with http.post(f"{stack.url}/webhooks/{provider}", data=body, headers=headers) as r:
        return r.status, await r.json()


def event_body(job_id: str, state: str) -> bytes:
    data = {"job_id": job_id, "state": state, "updated_at": "2025-03-08T14:26:40.000000Z"}
    return json.dumps(
        {"type": "job.updated", "id": f"evt_{secrets.token_hex(12)}", "data": data}
    ).encode()


def signed(body: bytes, *, secret: str = SECRET, ts: int | None = None) -> dict[str, str]:
    event_id = str(json.loads(body)["id"]) if body.startswith(b"{") else "evt_raw"
    return WebhookSigner(secret).headers(event_id, body, ts=ts)


def webhooks(observations: list[Observation]) -> list[Observation]:
    return [ob for ob in observations if ob.source == "webhook"]


async def snapshot(ledger: Ledger, stack: Stack, op: Operation | None = None) -> tuple[Any, ...]:
    """What a refused delivery must not change: the webhook observations and audit entries
    of the whole ledger, and the operation's record and audit entries."""
    with closing(sqlite3.connect(stack.db)) as conn:
        query = "SELECT count(*) FROM observations WHERE source = 'webhook'"
        (observed,) = conn.execute(query).fetchone()
    kinds = [json.loads(row.entry)["kind"] for row in await ledger.store.audit_rows()]
    if op is None:
        return observed, kinds.count("webhook.received")
    own = await ledger.store.audit_rows(op.operation_id)
    return observed, kinds.count("webhook.received"), await ledger.get(op.operation_id), own


async def test_an_event_delivered_three_times_is_recorded_once(
    stack: Stack, ledger: Ledger, http: aiohttp.ClientSession
) -> None:
    """Three concurrent deliveries of one `succeeded` event: one is accepted, two are
    answered duplicate; one observation and one audit entry exist; the status read that
    follows finds the job running, and the operation goes on observing."""
    op = await accepted_op(ledger, stack, QUIET)
    assert op.remote_job_id is not None
    headers, body = stack.sim.signed_event(op.remote_job_id, "succeeded")
    answers = await asyncio.gather(*(deliver(http, stack, headers, body) for _ in range(3)))
    assert sorted(status for status, _ in answers) == [200, 200, 200]
    assert sorted(doc["status"] for _, doc in answers) == ["accepted", "duplicate", "duplicate"]
    seen = webhooks(await ledger.store.observations(op.operation_id))
    event_id = json.loads(body)["id"]
    assert [(ob.ref, ob.event_id, ob.remote_state) for ob in seen] == [
        (event_id, f"{PROVIDER}:{event_id}", "succeeded")
    ]
    entries = await ledger.store.audit_rows(op.operation_id)
    received = [row.entry for row in entries if json.loads(row.entry)["kind"] == "webhook.received"]
    assert len(received) == 1
    assert SECRET not in received[0] and headers["webhook-signature"] not in received[0]
    assert (await ledger.get(op.operation_id)).remote_state in ("queued", "running")

    async def read() -> bool:  # the status read the event asked for: the job still runs
        return (await ledger.get(op.operation_id)).remote_state == "running"

    await until_true_async(read, 15, "read")
    assert (await ledger.get(op.operation_id)).state is State.OBSERVING


async def test_success_is_declared_only_after_a_status_read(stack: Stack, ledger: Ledger) -> None:
    """The simulator finishes the job by itself and says so by webhook; the worker reads
    the status (polls are ten minutes apart, so only the webhook can cause it) and only
    that read's observation moves the operation to result_collecting, then succeeded."""
    op = await accepted_op(ledger, stack, {"duration_seconds": 2.5})

    async def succeeded() -> bool:
        return (await ledger.get(op.operation_id)).state is State.SUCCEEDED

    await until_true_async(succeeded, 15, "succeeded")
    observations = await ledger.store.observations(op.operation_id)
    hint = next(ob for ob in webhooks(observations) if ob.remote_state == "succeeded")
    history = await ledger.store.history(op.operation_id)
    moved = next(t for t in history if t.to_state is State.RESULT_COLLECTING)
    assert moved.evidence is Evidence.OBSERVED_SUCCEEDED
    assert [t.to_state for t in history][-1] is State.SUCCEEDED
    read = next(
        ob for ob in observations if ob.source == "status" and ob.remote_state == "succeeded"
    )
    assert moved.cause == f"observation:{read.ref}" and hint.observed_at < read.observed_at
    deciding = next(
        a for a in await ledger.store.attempts(op.operation_id) if a.attempt_id == read.ref
    )
    assert deciding.kind is AttemptKind.STATUS and deciding.started_at > hint.observed_at
    calls = [c for c in stack.sim.calls if c.kind == "status" and c.job_id == op.remote_job_id]
    assert any(datetime.fromisoformat(c.at) > hint.observed_at for c in calls)


async def test_out_of_order_events_never_move_an_operation_back(
    stack: Stack, ledger: Ledger, http: aiohttp.ClientSession
) -> None:
    """The simulator sends `succeeded` before the held-back `running`; later a stale
    `running` event arrives for the finished operation. Both are recorded as observations;
    the state, the remote state and the schedule never go backwards."""
    op = await accepted_op(ledger, stack, {"duration_seconds": 1.5, "webhooks": "out_of_order"})

    async def settled() -> bool:
        seen = webhooks(await ledger.store.observations(op.operation_id))
        return (await ledger.get(op.operation_id)).state is State.SUCCEEDED and len(seen) == 2

    await until_true_async(settled, 15, "settled")
    seen = webhooks(await ledger.store.observations(op.operation_id))
    assert [ob.remote_state for ob in seen] == ["succeeded", "running"]
    assert op.remote_job_id is not None
    headers, body = stack.sim.signed_event(op.remote_job_id, "running")
    before = await ledger.get(op.operation_id)
    reads = stack.sim.jobs[op.remote_job_id].status_reads
    assert await deliver(http, stack, headers, body) == (200, {"status": "accepted"})
    # Kept as a sleep: what is tested is that nothing happens (no status read) during one
    # idle poll of the worker; no condition marks the end of an absence.
    await asyncio.sleep(1.2)  # longer than the worker's idle poll
    after = await ledger.get(op.operation_id)
    assert (after.state, after.remote_state) == (State.SUCCEEDED, "succeeded")
    assert after.next_poll_at is None
    assert stack.sim.jobs[op.remote_job_id].status_reads == reads
    history = [t.to_state for t in await ledger.store.history(op.operation_id)]
    assert history == [State.ACCEPTED, State.RESULT_COLLECTING, State.SUCCEEDED]
    assert after.version == before.version + 1  # the observation, nothing else


async def test_forged_signatures_are_refused_and_change_nothing(
    stack: Stack, ledger: Ledger, http: aiohttp.ClientSession
) -> None:
    """A tampered body, another secret, no signature, a garbled signature or the HMAC
    scheme's headers on a Standard Webhooks provider: each 401, nothing recorded."""
    op = await accepted_op(ledger, stack, QUIET)
    assert op.remote_job_id is not None
    headers, body = stack.sim.signed_event(op.remote_job_id, "running")
    stripped = {k: v for k, v in headers.items() if not k.startswith("webhook-")}
    garbled = {**headers, "webhook-signature": "v1,bm90IGEgc2lnbmF0dXJl v1,!!! v2,abc"}
    hmac_style = {**stripped, **WebhookSigner("raw-secret", "hmac").headers("evt_1", body)}
    forgeries = [
        (headers, body.replace(b'"running"', b'"succeeded"')),
        (signed(body, secret=new_webhook_secret()), body),
        (stripped, body),
        (garbled, body),
        (hmac_style, body),
    ]
    before = await snapshot(ledger, stack, op)
    for forged_headers, forged_body in forgeries:
        status, document = await deliver(http, stack, forged_headers, forged_body)
        assert status == 401, document
        assert document["error"] in ("bad_signature", "unsigned")
    assert await snapshot(ledger, stack, op) == before


async def test_stale_and_future_timestamps_are_refused(
    stack: Stack, ledger: Ledger, http: aiohttp.ClientSession
) -> None:
    """Correctly signed events stamped outside the tolerance, either way, get 401."""
    op = await accepted_op(ledger, stack, QUIET)
    assert op.remote_job_id is not None
    before = await snapshot(ledger, stack, op)
    for offset in (-60, +60):
        body = event_body(op.remote_job_id, "succeeded")
        stamped = signed(body, ts=int(time.time()) + offset)
        status, document = await deliver(http, stack, stamped, body)
        assert (status, document["error"]) == (401, "stale_timestamp")
    assert await snapshot(ledger, stack, op) == before


async def test_a_captured_request_replayed_after_the_tolerance_is_refused(
    stack: Stack, ledger: Ledger, http: aiohttp.ClientSession
) -> None:
    """A delivered request re-sent after the tolerance gets 401, not "duplicate"; a
    captured request never delivered in time gets 401 and is never recorded."""
    op = await accepted_op(ledger, stack, QUIET)
    assert op.remote_job_id is not None
    first = stack.sim.signed_event(op.remote_job_id, "running")
    held = stack.sim.signed_event(op.remote_job_id, "succeeded")
    assert await deliver(http, stack, *first) == (200, {"status": "accepted"})

    async def read() -> bool:  # the status read the event asked for, written
        current = await ledger.get(op.operation_id)
        return current.remote_state == "running" and current.lease_owner is None

    await until_true_async(read, 15, "read")
    await asyncio.sleep(TOLERANCE + 1.5)  # the behaviour under test: the events grow stale
    before = await snapshot(ledger, stack, op)
    for headers, body in (first, held):
        status, document = await deliver(http, stack, headers, body)
        assert (status, document["error"]) == (401, "stale_timestamp")
    assert await snapshot(ledger, stack, op) == before
    refs = [ob.ref for ob in await ledger.store.observations(op.operation_id)]
    assert json.loads(held[1])["id"] not in refs


async def test_hmac_signed_events_under_the_provider_files_header_names(
    stack: Stack, ledger: Ledger, http: aiohttp.ClientSession
) -> None:
    """The HMAC-over-body scheme with the header names its provider file sets: a valid event
    is accepted, then answered duplicate; a tampered body or the default names get 401."""
    op = await accepted_op(ledger, stack, QUIET, provider=HMAC)
    assert op.remote_job_id is not None
    body = event_body(op.remote_job_id, "running")
    sent = WebhookSigner(HMAC_SECRET, "hmac").headers("ignored", body)
    headers = {k.replace("X-Webhook-Timestamp", "X-Sim-Time"): v for k, v in sent.items()}
    headers["X-Sim-Signature"] = headers.pop("X-Webhook-Signature")
    for answer in ("accepted", "duplicate"):
        assert await deliver(http, stack, headers, body, HMAC) == (200, {"status": answer})
    tampered = body.replace(b"running", b"failed")
    assert (await deliver(http, stack, headers, tampered, HMAC))[0] == 401
    assert (await deliver(http, stack, sent, body, HMAC))[1]["error"] == "unsigned"
    assert len(webhooks(await ledger.store.observations(op.operation_id))) == 1


NOWHERE = "job_" + secrets.token_hex(8)
NAN = b'{"id": "e", "data": {"job_id": "j", "state": "x", "n": NaN}}'
REFUSED = {
    "no-such-job": (PROVIDER, event_body(NOWHERE, "succeeded"), (404, "unknown_job")),
    "not-json": (PROVIDER, b"not json at all", (400, "malformed")),
    "no-job-id": (PROVIDER, b'{"id": "evt_a", "data": {"state": "running"}}', (400, "malformed")),
    "no-state": (PROVIDER, b'{"id": "evt_b", "data": {"job_id": "job_1"}}', (400, "malformed")),
    "nan": (PROVIDER, NAN, (400, "malformed")),
    "no-such-provider": ("nosuch", event_body(NOWHERE, "running"), (404, "unknown_provider")),
    "no-webhooks": ("plain", event_body(NOWHERE, "running"), (404, "no_webhooks")),
    "outside": ("..%2Fproviders%2Fplain", event_body(NOWHERE, "x"), (404, "unknown_provider")),
}


@pytest.mark.parametrize("case", list(REFUSED))
async def test_signed_deliveries_that_name_nothing_usable_are_refused(
    stack: Stack,
    ledger: Ledger,
    http: aiohttp.ClientSession,
    case: str,
) -> None:
    """Correctly signed, yet about a job no operation holds (404), not a readable event
    (400), or for a provider that is unknown, has no [webhooks] or lies outside the
    providers folder (404): refused, nothing recorded."""
    provider, body, expected = REFUSED[case]
    before = await snapshot(ledger, stack)
    status, document = await deliver(http, stack, signed(body), body, provider=provider)
    assert (status, document["error"]) == expected
    assert await snapshot(ledger, stack) == before


def test_sigterm_stops_serve_and_logs_are_json_without_secrets(stack: Stack) -> None:
    """GET /healthz answers ok, the worker id and counts by state; SIGTERM ends serve with
    status 0; every stderr line is one JSON object, the worker's lines carry operation and
    trace ids, and no secret or signature appears anywhere."""
    with urllib.request.urlopen(f"{stack.url}/healthz", timeout=5) as resp:
        health = json.loads(resp.read())
    assert (resp.status, health["ok"], health["worker_id"]) == (200, True, "serve-test")
    assert health["states"]["succeeded"] >= 2 and health["states"]["observing"] >= 1
    stack.proc.send_signal(signal.SIGTERM)
    assert stack.proc.wait(timeout=20) == 0
    text = stack.log.read_text()
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    assert lines and all(isinstance(line, dict) for line in lines)
    assert lines[-1]["message"] == "stopped"
    worker = [line for line in lines if line["logger"] == "jobtrail.worker"]
    assert any({"operation_id", "trace_id", "remote_job_id", "state"} <= set(w) for w in worker)
    assert any("webhook refused" in line["message"] for line in lines)
    for secret in (SECRET, SECRET[6:], HMAC_SECRET, TOKEN, *stack.sent_signatures):
        assert secret not in text
