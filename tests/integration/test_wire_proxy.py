"""The recording proxy and its check (tests/wire.py, tests/wirecheck.py) against a server
that reads a request and closes the connection unanswered: one request on the wire per
attempt in the ledger, whatever the method (DESIGN: the record is the wire)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

import wirecheck
from jobtrail.core.states import State
from wire import PROXIES, WireProxy, _Parser, behind

from harness import harness

CREATED = json.dumps({"job_id": "job-1", "state": "running"}).encode()


@asynccontextmanager
async def dropping(drop: set[str]) -> AsyncIterator[tuple[str, list[str]]]:
    """A server that answers a create (POST, PUT) with a running job and a status read with
    "running", but reads a request of a method in `drop` and closes the connection without a
    word; yields its base URL and the methods it received, in order."""
    received: list[str] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        parser = _Parser()
        while data := await reader.read(65536):
            for method, *_ in parser.feed(data):
                received.append(method)
                if method in drop:
                    writer.close()
                    return
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(CREATED)}\r\n\r\n".encode()
                    + CREATED
                )
                await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", received
    finally:
        server.close()
        await server.wait_closed()


def _provider(base_url: str, create: str, cancel: str) -> Any:
    def edit(doc: dict[str, Any]) -> None:
        doc["base_url"] = base_url
        doc["create"]["method"] = create
        doc["cancel"] = {"method": cancel, "path": "/v1/jobs/{job_id}"}
        doc.pop("base_url_env", None)

    return edit


@pytest.mark.parametrize(
    ("create", "cancel", "dropped"),
    [
        ("PUT", "DELETE", "PUT"),
        ("POST", "DELETE", "POST"),
        ("POST", "DELETE", "GET"),
        ("POST", "DELETE", "DELETE"),
    ],
)
async def test_a_dropped_answer_is_one_request_on_the_wire(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, create: str, cancel: str, dropped: str
) -> None:
    """A create, a status read or a cancel whose connection closes unanswered crossed the wire once,
    as the ledger records it: the HTTP client sends nothing the ledger did not ask for."""
    async with dropping({dropped}) as (upstream, received):
        with WireProxy(upstream) as proxy:
            edit = _provider(proxy.base_url, create, cancel)
            async with harness(tmp_path, monkeypatch=monkeypatch, edit=edit) as h:
                op = await h.submit({"report": "feb"})
                await h.tick()
                if dropped == "GET":
                    await h.tick()  # the create was answered; now the status read
                if dropped == "DELETE":
                    await h.rt.ledger.cancel(op.operation_id, actor="test", reason="not needed")
                    await h.tick()  # the cancel, sent by the lease owner
                after = await h.op(op)
                problems = wirecheck.check(
                    proxy.requests, wirecheck.sqlite_records(tmp_path), [proxy.base_url]
                )
    assert problems == []
    assert received.count(dropped) == 1, received
    assert after.state is not State.CREATE_PENDING


def test_behind_names_the_live_proxys_server_when_a_port_is_handed_out_again() -> None:
    """A stopped proxy stays in PROXIES (the check reads what it recorded); when the system
    hands its port to a new proxy, `behind` names the new proxy's server, not the stopped
    one's (an AWS test once forwarded to a moto server stopped with an earlier module)."""
    old, new = WireProxy("http://127.0.0.1:1"), WireProxy("http://127.0.0.1:2")
    old.base_url = new.base_url = "http://127.0.0.1:9"  # the same port, one after the other
    PROXIES.extend([old, new])
    try:
        assert behind("http://127.0.0.1:9") == "http://127.0.0.1:2"
        assert behind("http://127.0.0.1:8") == "http://127.0.0.1:8"
    finally:
        PROXIES.remove(old)
        PROXIES.remove(new)
