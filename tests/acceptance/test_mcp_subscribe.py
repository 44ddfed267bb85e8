"""Resource updates for clients of the handshake-era protocol (2025-11-25, what most MCP
clients speak): the official SDK client pinned to it sees `resources.subscribe: true`,
subscribes to an operation's resource with `resources/subscribe`, and hears
`notifications/resources/updated` on its session as a worker drives the operation on the
simulator; after `resources/unsubscribe` it hears none. Subscribing is reading: another
agent's operation is refused as reading it is, and a uri that names no operation is refused
in words. Over stdio (`jobtrail mcp`) and over `jobtrail serve`'s /mcp."""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import (
    EmptyResult,
    ResourceUpdatedNotification,
    SubscribeRequest,
    SubscribeRequestParams,
    UnsubscribeRequest,
    UnsubscribeRequestParams,
)
from test_mcp_http import ALPHA, BETA, serving
from test_mcp_http_origin import post

from jobtrail.simulator import SimulatorThread

from mcptasks import SECRET, provider_folder, stdio_server, submit
from waits import until_true_async

pytestmark = pytest.mark.slow  # real servers, a job driven in real time
HANDSHAKE = "2025-11-25"
STOPS_WITHIN = 8.0  # seconds: serve's app waits 10 s for requests in flight


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[SimulatorThread]:
    with SimulatorThread(token=SECRET) as simulator:
        provider_folder(tmp_path / "providers", simulator.base_url)
        yield simulator


class Legacy:
    """A client on protocol 2025-11-25 and the resource updates its session heard."""

    def __init__(self) -> None:
        self.updates: list[str] = []
        self.client: Client | None = None
        self.session_id: str | None = None  # over HTTP

    async def heard(self, message: Any) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            self.updates.append(str(message.params.uri))

    @property
    def c(self) -> Client:
        assert self.client is not None
        return self.client

    # The SDK's own subscribe_resource is deprecated (it is gone at 2026-07-28), and a
    # warning fails this suite: the same requests, sent as the SDK sends them.
    async def subscribe(self, uri: str) -> None:
        request = SubscribeRequest(params=SubscribeRequestParams(uri=uri))
        await self.c.session.send_request(request, EmptyResult)

    async def unsubscribe(self, uri: str) -> None:
        request = UnsubscribeRequest(params=UnsubscribeRequestParams(uri=uri))
        await self.c.session.send_request(request, EmptyResult)

    async def submit(self, request: dict[str, Any], key: str) -> str:
        sent = await self.c.call_tool("submit_job", submit(request, key))
        assert not sent.is_error, sent.content
        return str((sent.structured_content or {})["operation_id"])

    async def state(self, op_id: str) -> str:
        read = await self.c.read_resource(f"jobtrail://operations/{op_id}")
        return str(json.loads(getattr(read.contents[0], "text", ""))["state"])

    async def until_state(self, op_id: str, states: set[str]) -> dict[str, Any]:
        for _ in range(60):
            answer = await self.c.call_tool(
                "wait_job", {"operation_id": op_id, "timeout_seconds": 1}
            )
            job: dict[str, Any] = answer.structured_content or {}
            if job.get("state") in states:
                return job
        raise AssertionError(f"{op_id} never reached {states}")


@asynccontextmanager
async def over_stdio(tmp_path: Path, *options: str) -> AsyncIterator[Legacy]:
    legacy = Legacy()
    params = stdio_server(tmp_path, tmp_path / "providers", "--lease", "2s", *options)
    async with Client(params, mode="legacy", message_handler=legacy.heard) as client:
        legacy.client = client
        yield legacy


@asynccontextmanager
async def over_http(url: str, token: str) -> AsyncIterator[Legacy]:
    legacy = Legacy()

    async def session_of(response: httpx2.Response) -> None:
        legacy.session_id = response.headers.get("mcp-session-id") or legacy.session_id

    headers = {"Authorization": f"Bearer {token}"}
    timeout = httpx2.Timeout(30, read=300)
    hooks = {"response": [session_of]}
    async with httpx2.AsyncClient(headers=headers, timeout=timeout, event_hooks=hooks) as http:
        transport = streamable_http_client(f"{url}/mcp", http_client=http)
        async with Client(transport, mode="legacy", message_handler=legacy.heard) as client:
            legacy.client = client
            yield legacy


async def barrier(agent: Legacy, key: str) -> None:
    """A job subscribed to, until its first update is heard: the look of the ledger that
    sent it listed the ledger after this call began."""
    uri = f"jobtrail://operations/{await agent.submit({'account': key}, key)}"
    await agent.subscribe(uri)
    await until_true_async(lambda: uri in agent.updates, 30, f"{key}'s update")


async def follow_two_operations(agent: Legacy) -> tuple[list[str], list[str], int]:
    """Subscribe to a job that runs a few seconds (kept) and to one that never finishes
    (dropped after its first update, then cancelled). Two barriers after the cancel: any
    update the cancel caused was sent before the second one's (a look of the ledger sends
    the newest operation's first). Returns the kept job's updates, the dropped one's, and
    the kept job's transitions."""
    c = agent.c
    assert c.protocol_version == HANDSHAKE
    caps = c.server_capabilities.resources
    assert caps is not None and caps.subscribe is True
    kept = await agent.submit({"account": "s1", "_sim": {"duration_seconds": 3}}, "kept")
    dropped = await agent.submit({"account": "s2", "_sim": {"never_finish": True}}, "dropped")
    kept_uri, dropped_uri = (f"jobtrail://operations/{op}" for op in (kept, dropped))
    await agent.subscribe(kept_uri)
    await agent.subscribe(dropped_uri)
    await agent.subscribe(dropped_uri)  # twice is once
    await until_true_async(lambda: dropped_uri in agent.updates, 30, "the dropped job's update")
    await agent.unsubscribe(dropped_uri)
    heard = agent.updates.count(dropped_uri)
    await c.call_tool("cancel_job", {"operation_id": dropped, "reason": "test"})
    await agent.until_state(dropped, {"cancelled"})
    await barrier(agent, "barrier-1")
    await barrier(agent, "barrier-2")
    await agent.until_state(kept, {"succeeded"})
    await until_true_async(lambda: kept_uri in agent.updates, 30, "the kept job's update")
    await barrier(agent, "barrier-3")  # the kept job's last update has come
    job = await c.call_tool("get_job", {"operation_id": kept})
    transitions = (job.structured_content or {})["recent_transitions"]
    dropped_updates = [u for u in agent.updates if u == dropped_uri]
    assert len(dropped_updates) == heard, "an update after the unsubscribe"
    return [u for u in agent.updates if u == kept_uri], dropped_updates, len(transitions)


async def test_a_2025_client_over_stdio_hears_each_state_change_until_it_unsubscribes(
    tmp_path: Path, sim: SimulatorThread
) -> None:
    """Over stdio: subscribe: true; the kept job's updates, at most one per state change
    (two changes within one look of the ledger are one), none of the dropped job's after
    its unsubscribe."""
    async with over_stdio(tmp_path) as agent:
        kept, dropped, changes = await follow_two_operations(agent)
    assert 1 <= len(kept) <= changes and len(dropped) >= 1, (kept, changes)


async def test_a_2025_client_over_http_hears_each_state_change_until_it_unsubscribes(
    tmp_path: Path, sim: SimulatorThread
) -> None:
    """The same over `serve`'s /mcp: the updates come on the agent's own session. SIGTERM
    while the client holds its session's stream open stops serve without waiting out the
    app's 10 s shutdown timeout for that stream."""
    with serving(tmp_path, str(tmp_path / "l.db"), "serve-s") as (url, proc):
        async with over_http(url, ALPHA) as agent:
            kept, dropped, changes = await follow_two_operations(agent)
            proc.send_signal(signal.SIGTERM)
            stopped = await asyncio.to_thread(proc.wait, STOPS_WITHIN)
    assert 1 <= len(kept) <= changes and len(dropped) >= 1, (kept, changes)
    assert stopped == 0


async def refusals(alpha: Legacy, beta: Legacy) -> dict[str, str]:
    """What beta is told subscribing to alpha's operation (and reading it), to an unknown
    operation and to a uri that names none; alpha subscribes to its own."""
    op_id = await alpha.submit({"account": "r1"}, "alpha-r1")
    uri = f"jobtrail://operations/{op_id}"
    await alpha.subscribe(uri)
    told: dict[str, str] = {}
    attempts = {
        "read": lambda: beta.c.read_resource(uri),
        "subscribe": lambda: beta.subscribe(uri),
        "unknown": lambda: beta.subscribe("jobtrail://operations/op_nope"),
        "malformed": lambda: beta.subscribe("jobtrail://operations/"),
        "foreign": lambda: beta.subscribe("https://example.com/x"),
    }
    for name, attempt in attempts.items():
        with pytest.raises(MCPError) as refused:
            await attempt()
        told[name] = f"{refused.value.error.code} {refused.value.error.message}"
    told["op_id"] = op_id
    return told


def check_refusals(told: dict[str, str]) -> None:
    op_id = told["op_id"]
    assert told["subscribe"] == told["read"], told
    assert f"agent:beta may not read operation {op_id}" in told["subscribe"]
    assert told["unknown"].startswith("-32602 ") and "op_nope" in told["unknown"]
    for name in ("malformed", "foreign"):
        assert told[name].startswith("-32602 "), told
        assert "is not an operation's resource: subscribe to jobtrail://operations/" in told[name]


async def test_an_agent_may_not_subscribe_to_another_agents_operation_over_stdio(
    tmp_path: Path, sim: SimulatorThread
) -> None:
    """beta's subscription to alpha's operation is refused in the words of its refused read;
    an unknown operation and a uri that names none are refused with -32602, in words."""
    as_alpha = over_stdio(tmp_path, "--no-worker", "--actor", "alpha")
    as_beta = over_stdio(tmp_path, "--no-worker", "--actor", "beta")
    async with as_alpha as alpha, as_beta as beta:
        check_refusals(await refusals(alpha, beta))


async def test_an_agent_may_not_subscribe_to_another_agents_operation_over_http(
    tmp_path: Path, sim: SimulatorThread
) -> None:
    """The same over `serve`'s /mcp, each agent with its own token; alpha's session, with
    its subscription, answers alpha's token only (another's reads as unknown, 404); and a
    subscription without a session is refused, not taken and never kept."""
    listing = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}}
    with serving(tmp_path, str(tmp_path / "l.db"), "serve-r") as (url, _):
        async with over_http(url, ALPHA) as alpha, over_http(url, BETA) as beta:
            told = await refusals(alpha, beta)
            check_refusals(told)
            uri = f"jobtrail://operations/{told['op_id']}"  # alpha's own
            subscribing = listing | {"method": "resources/subscribe", "params": {"uri": uri}}
            assert alpha.session_id is not None and alpha.session_id != beta.session_id
            on = {"Mcp-Session-Id": alpha.session_id, "MCP-Protocol-Version": HANDSHAKE}
            as_beta = await asyncio.to_thread(post, url, listing, bearer(BETA) | on)
            as_alpha = await asyncio.to_thread(post, url, listing, bearer(ALPHA) | on)
            alone = {"MCP-Protocol-Version": HANDSHAKE}  # no session: nowhere to send updates
            sessionless = await asyncio.to_thread(post, url, subscribing, bearer(ALPHA) | alone)
    assert "needs a session to send the updates on: `initialize` first" in sessionless[1]
    assert as_beta[0] == 404 and "submit_job" not in as_beta[1]
    assert as_alpha[0] == 200 and "submit_job" in as_alpha[1]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
