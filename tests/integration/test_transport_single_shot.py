"""One request on the wire, one attempt in the ledger: a call whose connection is closed
before the answer is sent once, by every method and every kind of call, on a fresh
connection and on a reused keep-alive one (aiohttp re-sends GET, PUT and DELETE on its own
unless told not to: providers/transport.py). Against a real loopback server
(tests/dropping.py) that reads each request whole and closes the connection unanswered."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from dropping import Answer, DroppingServer, Seen
from jobtrail.clock import VirtualClock
from jobtrail.core.model import Attempt, AttemptKind, Operation
from jobtrail.core.proof import tier_rule
from jobtrail.core.states import State
from jobtrail.providers.file.config import ProviderSpec, parse_provider
from jobtrail.providers.transport import provider_session
from jobtrail.services.runtime import Runtime, runtime

from harness import tick
from stores import fresh_ledger

METHODS = ["POST", "PUT", "PATCH", "DELETE", "GET"]
CONNECTIONS = ["fresh", "reused"]


@pytest.mark.parametrize("connection", CONNECTIONS)
@pytest.mark.parametrize("method", METHODS)
async def test_the_provider_session_sends_a_dropped_request_once(
    method: str, connection: str
) -> None:
    """The session every provider call goes out on: a request whose connection closes
    unanswered arrives once and fails, whatever its method."""
    server = DroppingServer(lambda seen: None if seen.path == "/drop" else Answer(json={}))
    base = await server.start()
    session = provider_session(4)
    try:
        if connection == "reused":
            async with session.get(f"{base}/warm") as answered:
                await answered.read()
        with pytest.raises(aiohttp.ClientError):
            async with session.request(method, f"{base}/drop", data=b"{}") as response:
                await response.read()
    finally:
        await session.close()
        await server.close()
    dropped = server.requests(prefix="/drop")
    assert len(dropped) == 1, f"{len(dropped)} {method} requests for one call"
    warm = server.requests(prefix="/warm")
    assert [w.connection for w in warm] == ([dropped[0].connection] if warm else [])


@dataclass
class Rig:
    server: DroppingServer
    rt: Runtime
    clock: VirtualClock
    spec: ProviderSpec

    async def submit(self, body: dict[str, Any]) -> Operation:
        return await self.rt.ledger.submit(self.spec, body, actor="test-agent")

    async def tick(self) -> int:
        return await tick(self.rt, self.clock)

    async def op(self, op: Operation) -> Operation:
        return await self.rt.ledger.get(op.operation_id)

    async def attempts(self, op: Operation, kind: AttemptKind) -> list[Attempt]:
        return [a for a in await self.rt.ledger.store.attempts(op.operation_id) if a.kind is kind]


def provider(base_url: str, create: str, cancel: str) -> dict[str, Any]:
    return {
        "name": "dropper",
        "base_url": base_url,
        "timeout": "2s",
        "create": {
            "method": create,
            "path": "/v1/jobs",
            "idempotency": {"header": "Idempotency-Key"},
            "client_reference": {"header": "X-Client-Reference"},
            "job_id": "id",
            "state": "state",
        },
        "status": {"path": "/v1/jobs/{job_id}", "state": "state"},
        "states": {"running": "running", "succeeded": "succeeded"},
        "cancel": {"method": cancel, "path": "/v1/jobs/{job_id}/cancel"},
        "result": {"path": "/v1/jobs/{job_id}/result", "content_type": "application/json"},
        "reconcile": {"list": {"path": "/v1/lookup?ref={operation_id}", "job_id": "id"}},
    }


@asynccontextmanager
async def dropping_rig(
    tmp_path: Path, script: Callable[[Seen], Answer | None], connection: str, **methods: str
) -> AsyncIterator[Rig]:
    server = DroppingServer(script, close_after_answer=connection == "fresh")
    base = await server.start()
    clock = VirtualClock()
    doc = provider(base, methods.get("create", "POST"), methods.get("cancel", "POST"))
    try:
        async with (
            fresh_ledger("sqlite", tmp_path) as db,
            runtime(db.url, tmp_path / "data", worker_id="worker-1", clock=clock) as rt,
        ):
            yield Rig(server=server, rt=rt, clock=clock, spec=parse_provider(doc))
    finally:
        await server.close()


def one_dropped(rig: Rig, method: str, prefix: str, connection: str) -> Seen:
    """The one request of the dropped call, on the kind of connection the test asked for."""
    dropped = [s for s in rig.server.requests(method, prefix) if s.headers.get("x-drop")]
    if not dropped:  # a request the test cannot mark: the path says which call it is
        dropped = rig.server.requests(method, prefix)
    assert len(dropped) == 1, f"{len(dropped)} {method} {prefix} requests for one call"
    earlier = rig.server.seen[: rig.server.seen.index(dropped[0])]
    reused = any(s.connection == dropped[0].connection for s in earlier)
    assert reused == (connection == "reused"), "not the connection the test meant"
    return dropped[0]


def job(state: str) -> Answer:
    return Answer(json={"id": "j1", "state": state})


@pytest.mark.parametrize("connection", CONNECTIONS)
@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH"])
async def test_a_create_whose_answer_is_lost_is_sent_once_and_recorded_unknown(
    tmp_path: Path, method: str, connection: str
) -> None:
    """The create of the second operation loses its answer: one request, one create
    attempt, and the operation in create_unknown (never a second create on the wire)."""

    def script(seen: Seen) -> Answer | None:
        return None if b"lose" in seen.body else job("running")

    async with dropping_rig(tmp_path, script, connection, create=method) as rig:
        await rig.submit({"n": "warm"})
        await rig.tick()
        op = await rig.submit({"n": "lose"})
        await rig.tick()
        lost = [s for s in rig.server.requests(method, "/v1/jobs") if b"lose" in s.body]
        assert len(lost) == 1, f"{len(lost)} {method} creates on the wire for one call"
        earlier = rig.server.seen[: rig.server.seen.index(lost[0])]
        assert any(s.connection == lost[0].connection for s in earlier) == (connection == "reused")
        attempts = await rig.attempts(op, AttemptKind.CREATE)
        assert [a.outcome for a in attempts] == ["ambiguous"]
        assert (await rig.op(op)).state is State.CREATE_UNKNOWN


@pytest.mark.parametrize("connection", CONNECTIONS)
async def test_a_status_read_whose_answer_is_lost_is_sent_once_and_recorded_failed(
    tmp_path: Path, connection: str
) -> None:
    """A status GET that loses its answer: one GET, one failed read, the job still followed."""

    def script(seen: Seen) -> Answer | None:
        return None if seen.method == "GET" else job("running")

    async with dropping_rig(tmp_path, script, connection) as rig:
        op = await rig.submit({"n": 1})
        await rig.tick()  # create, answered
        await rig.tick()  # status, lost
        one_dropped(rig, "GET", "/v1/jobs/j1", connection)
        attempts = await rig.attempts(op, AttemptKind.STATUS)
        assert [a.outcome for a in attempts] == ["ambiguous"]
        assert (await rig.op(op)).state in (State.ACCEPTED, State.OBSERVING)


@pytest.mark.parametrize("connection", CONNECTIONS)
@pytest.mark.parametrize("method", ["POST", "DELETE"])
async def test_a_cancel_whose_answer_is_lost_is_sent_once_and_recorded_unknown(
    tmp_path: Path, method: str, connection: str
) -> None:
    """A cancel that loses its answer: one request on the wire, one cancel attempt whose
    outcome is unknown, and no `cancelled` without the provider saying so."""

    def script(seen: Seen) -> Answer | None:
        return None if seen.path.endswith("/cancel") else job("running")

    async with dropping_rig(tmp_path, script, connection, cancel=method) as rig:
        op = await rig.submit({"n": 1})
        await rig.tick()  # create
        await rig.rt.ledger.cancel(op.operation_id, actor="test-agent", reason="test")
        await rig.tick()  # the cancel, lost
        one_dropped(rig, method, "/v1/jobs/j1/cancel", connection)
        attempts = await rig.attempts(op, AttemptKind.CANCEL)
        assert [a.outcome for a in attempts] == ["ambiguous"]
        assert (await rig.op(op)).state is not State.CANCELLED


@pytest.mark.parametrize("connection", CONNECTIONS)
async def test_a_result_fetch_whose_answer_is_lost_is_sent_once_and_recorded_failed(
    tmp_path: Path, connection: str
) -> None:
    """A result GET that loses its answer (a one-time download, say): one GET, one failed
    result attempt, and no `succeeded` without the result."""

    def script(seen: Seen) -> Answer | None:
        return None if seen.path.endswith("/result") else job("succeeded")

    async with dropping_rig(tmp_path, script, connection) as rig:
        op = await rig.submit({"n": 1})
        for _ in range(3):  # create (succeeded at once), then the result
            await rig.tick()
            if rig.server.requests("GET", "/v1/jobs/j1/result"):
                break
        one_dropped(rig, "GET", "/v1/jobs/j1/result", connection)
        attempts = await rig.attempts(op, AttemptKind.RESULT)
        assert [a.outcome for a in attempts] == ["ambiguous"]
        assert (await rig.op(op)).state is not State.SUCCEEDED


@pytest.mark.parametrize("connection", CONNECTIONS)
async def test_a_lookup_whose_answer_is_lost_is_sent_once_and_recorded_failed(
    tmp_path: Path, connection: str
) -> None:
    """A create answered 503 (ambiguous) is looked up by client reference; the lookup GET
    loses its answer: one GET, one failed lookup attempt, the operation still in doubt."""

    def script(seen: Seen) -> Answer | None:
        if seen.path.startswith("/v1/lookup"):
            return None
        return Answer(status=503, json={"error": "busy"})

    async with dropping_rig(tmp_path, script, connection) as rig:
        op = await rig.submit({"n": 1})
        for _ in range(4):
            await rig.tick()
            if rig.server.requests("GET", "/v1/lookup"):
                break
        one_dropped(rig, "GET", "/v1/lookup", connection)
        attempts = await rig.attempts(op, AttemptKind.RECONCILE)
        assert [a.outcome for a in attempts] == ["ambiguous"]
        assert (await rig.op(op)).state in (State.CREATE_UNKNOWN, State.RECONCILIATION)


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
async def test_a_redirect_is_recorded_as_the_answer_and_never_followed(
    tmp_path: Path, code: int
) -> None:
    """A status read answered with a redirect: the answer is recorded with its status, and
    nothing is sent to the Location it names (a provider file declares no redirects)."""

    def script(seen: Seen) -> Answer | None:
        if seen.method == "GET":
            return Answer(status=code, headers={"Location": "/v1/elsewhere"})
        return job("running")

    async with dropping_rig(tmp_path, script, "reused") as rig:
        op = await rig.submit({"n": 1})
        await rig.tick()  # create
        await rig.tick()  # status, redirected
        assert [s.path for s in rig.server.requests("GET")] == ["/v1/jobs/j1"]
        assert not rig.server.requests(prefix="/v1/elsewhere")
        attempts = await rig.attempts(op, AttemptKind.STATUS)
        assert [a.http_status for a in attempts] == [code]


@pytest.mark.parametrize("connection", CONNECTIONS)
@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH"])
async def test_a_provider_without_reconciliation_never_resends_a_lost_create(
    tmp_path: Path, method: str, connection: str
) -> None:
    """`provider check` says such a create is never resubmitted on its own: true for every
    method, the HTTP client included; the operation stops for a person after one request."""

    def script(seen: Seen) -> Answer | None:
        return None if b"lose" in seen.body else job("running")

    async with dropping_rig(tmp_path, script, connection, create=method) as rig:
        doc = dict(rig.spec.document)
        doc["create"] = {k: v for k, v in doc["create"].items() if k == "method" or k == "path"}
        doc["create"] |= {"job_id": "id", "state": "state"}
        doc.pop("reconcile")
        bare = parse_provider(doc)
        assert "never resubmits it on its own" in tier_rule(bare.capabilities, timedelta(1))
        await rig.rt.ledger.submit(bare, {"n": "warm"}, actor="test-agent")
        await rig.tick()
        op = await rig.rt.ledger.submit(bare, {"n": "lose"}, actor="test-agent")
        for _ in range(10):
            if not await rig.tick():
                break
        lost = [s for s in rig.server.requests(method, "/v1/jobs") if b"lose" in s.body]
        assert len(lost) == 1, f"{len(lost)} {method} creates on the wire"
        assert (await rig.op(op)).state is State.NEEDS_HUMAN
        assert len(await rig.attempts(op, AttemptKind.CREATE)) == 1


async def test_the_create_attempt_names_the_fields_jobtrail_wrote(tmp_path: Path) -> None:
    """The token and the reference written into the body (Ray's `submission_id`, a dotted
    field) are in the create attempt's recorded request, as they crossed the wire."""
    async with dropping_rig(tmp_path, lambda seen: job("running"), "reused") as rig:
        doc = dict(rig.spec.document)
        doc["create"] = dict(doc["create"])
        doc["create"]["idempotency"] = {"field": "submission_id"}
        doc["create"]["client_reference"] = {"field": "meta.ref"}
        doc["reconcile"] = {"same_token": True}
        spec = parse_provider(doc)
        op = await rig.rt.ledger.submit(spec, {"entrypoint": "x"}, actor="test-agent")
        await rig.tick()
        [sent] = rig.server.requests("POST")
        wire = json.loads(sent.body)
        assert wire["submission_id"] == op.idempotency_token
        assert wire["meta"] == {"ref": op.operation_id}
        [create] = await rig.attempts(op, AttemptKind.CREATE)
        assert create.request["body_fields"] == {
            "submission_id": op.idempotency_token,
            "meta.ref": op.operation_id,
        }
        assert op.request.body == {"entrypoint": "x"}  # the caller's, as submitted
