"""A rig for the AWS providers' tests: moto's server on loopback (Step Functions executing
its state machines, Athena), a real SQLite ledger and the real worker, with the provider
submitted to as a code provider (its declared CodeSpec, its settings stored with each
operation), exactly as `jobtrail.Client` and the CLI do.

Run as a script it is a worker that dies: it submits one Step Functions operation, sends its
StartExecution with the real provider and SIGKILLs itself once the answer is in.

    python aws_rig.py DB DATA_DIR ENDPOINT STATE_MACHINE_ARN BODY_JSON
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import requests
from aiohttp import web
from moto.server import ThreadedMotoServer

from jobtrail.clock import VirtualClock
from jobtrail.core.model import AttemptKind, Operation
from jobtrail.core.states import State
from jobtrail.presentation.explain import explain_text
from jobtrail.providers.aws import stepfunctions
from jobtrail.providers.code.contract import CodeSpec, Factory, declared
from jobtrail.services.runtime import Runtime, runtime

ROLE = "arn:aws:iam::123456789012:role/jobtrail-tests"
ENV = {
    "AWS_ACCESS_KEY_ID": "testing-key-id",
    "AWS_SECRET_ACCESS_KEY": "testing-secret-DO-NOT-LEAK",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",  # never look for an instance role off loopback
}


def set_env(env: dict[str, str], config_dir: Path) -> None:
    env.update(ENV)
    env["AWS_CONFIG_FILE"] = str(config_dir / "no-aws-config")
    env["AWS_SHARED_CREDENTIALS_FILE"] = str(config_dir / "no-aws-credentials")
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
        env.pop(name, None)


@dataclass
class Rig:
    rt: Runtime
    clock: VirtualClock
    spec: CodeSpec
    db: Path
    data: Path

    async def submit(self, body: Any, **options: Any) -> Operation:
        options.setdefault("actor", "test-agent")
        return await self.rt.ledger.submit(self.spec, body, **options)

    async def op(self, operation: Operation | str) -> Operation:
        op_id = operation if isinstance(operation, str) else operation.operation_id
        return await self.rt.ledger.get(op_id)

    async def path(self, operation: Operation) -> list[State]:
        steps = await self.rt.ledger.store.history(operation.operation_id)
        return [State.CREATE_PENDING, *(t.to_state for t in steps)]

    async def tick(self) -> int:
        """One round: jump the clock to the next due time, claim, drive each once."""
        from harness import tick  # here: this file also runs as a script (the SIGKILL case)

        return await tick(self.rt, self.clock)

    async def until(self, operation: Operation, *states: State, within: float = 30.0) -> Operation:
        """Drive the worker until the operation is in one of `states`. The remote side runs
        in real time (moto's executions run in threads), so rounds repeat until a real-time
        deadline, never a fixed number of them."""
        deadline = time.monotonic() + within
        while True:
            op = await self.op(operation)
            if op.state in states:
                return op
            if time.monotonic() > deadline:
                raise AssertionError(f"{op.operation_id} never reached {states}: {op.state}")
            if not await self.tick():
                await asyncio.sleep(0.05)  # nothing due: let the server's threads move


@asynccontextmanager
async def rig(
    tmp_path: Path, factory: Factory, settings: dict[str, Any], *, db: Path | None = None
) -> AsyncIterator[Rig]:
    """A runtime on a fresh (or given) SQLite ledger with the provider `factory` makes from
    `settings`; operations are submitted to it as the code provider it declares."""
    provider: Any = factory(settings)
    clock = VirtualClock()
    db, data = db or tmp_path / "ledger.db", tmp_path / "data"
    try:
        async with runtime(
            str(db),
            data,
            worker_id="worker-1",
            lease_for=timedelta(seconds=60),
            clock=clock,
            idle_poll=24 * 3600,
            providers=[provider],
        ) as rt:
            spec = declared(provider, settings, "tests")
            yield Rig(rt=rt, clock=clock, spec=spec, db=db, data=data)
    finally:
        await provider.close()


def sfn_settings(endpoint: str, state_machine_arn: str) -> dict[str, Any]:
    return {"state_machine_arn": state_machine_arn, "endpoint_url": endpoint, "timeout": "5s"}


def athena_settings(endpoint: str, **settings: Any) -> dict[str, Any]:
    return {"endpoint_url": endpoint, "timeout": "5s", **settings}


def eventually(check: Callable[[], Any], within: float = 10.0) -> Any:
    """Poll `check` until it returns something truthy, or fail at the deadline."""
    deadline = time.monotonic() + within
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("the condition never held")
        time.sleep(0.05)


async def aeventually(check: Callable[[], Awaitable[Any]], within: float = 10.0) -> Any:
    deadline = time.monotonic() + within
    while True:
        value = await check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("the condition never held")
        await asyncio.sleep(0.05)


async def explain(r: Rig, op: Operation) -> str:
    store = r.rt.ledger.store
    return explain_text(
        await r.op(op),
        await store.history(op.operation_id),
        await store.attempts(op.operation_id),
        await store.observations(op.operation_id),
        r.clock.now(),
    )


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    """moto's server on a free loopback port, with Step Functions executing state machines
    (its ASL interpreter runs Pass, Wait and Fail states in real time)."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    config = f"{endpoint}/moto-api/config"
    before = requests.get(config, timeout=10).json().get("stepfunctions")
    requests.post(
        config, json={"stepfunctions": {"execute_state_machine": True}}, timeout=10
    ).raise_for_status()
    from wire import WireProxy  # here: this file also runs as a script

    try:
        with WireProxy(endpoint) as wire:  # the wire check's recording proxy (tests/wire.py)
            yield wire.base_url
    finally:
        requests.post(
            config,
            json={"stepfunctions": before or {"execute_state_machine": False}},
            timeout=10,
        )
        server.stop()


@pytest.fixture
def aws_env(moto_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Fake credentials and a region from the environment (the standard chain), no profile."""
    env: dict[str, str] = dict(os.environ)
    set_env(env, tmp_path)
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        if name.startswith("AWS_"):
            monkeypatch.setenv(name, value)
    return moto_endpoint


class DroppingProxy:
    """A loopback proxy in front of the server that records every AWS action it forwards and
    can drop the answer to one: the request reaches the server and is carried out, then the
    connection is cut before a byte of the answer goes back."""

    def __init__(self, upstream: str) -> None:
        # The wire check's recording proxy goes in front of this one, closest to jobtrail
        # (the answers made up here are on jobtrail's wire); behind it, the server itself.
        from wire import behind  # here: this file also runs as a script

        self.upstream = behind(upstream)
        self._wire: Any = None
        self.drop: dict[str, int] = {}  # action -> how many answers to drop
        self.swallow: dict[str, int] = {}  # action -> how many requests never to forward
        # action -> (status, body): answered so, not forwarded, once its drops are used up
        self.fake: dict[str, tuple[int, dict[str, Any]]] = {}
        # action -> (status, body): answered with these bytes as they are (not JSON, say)
        self.fake_raw: dict[str, tuple[int, bytes]] = {}
        self.seen: list[tuple[str, dict[str, Any]]] = []
        self.traceparents: list[str | None] = []
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    async def start(self) -> str:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self._session = aiohttp.ClientSession()
        port = self._runner.addresses[0][1]
        from wire import WireProxy

        self._wire = WireProxy(f"http://127.0.0.1:{port}")
        url: str = self._wire.start()
        return url

    def sent(self, action: str) -> list[dict[str, Any]]:
        return [body for name, body in self.seen if name == action]

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        assert self._session is not None
        body = await request.read()
        action = request.headers.get("X-Amz-Target", "").rpartition(".")[2]
        if action:
            self.seen.append((action, json.loads(body or b"{}")))
            self.traceparents.append(request.headers.get("traceparent"))
        if self.swallow.get(action, 0) > 0:
            self.swallow[action] -= 1
            assert request.transport is not None
            request.transport.abort()  # heard by nobody; the caller cannot know that
            raise ConnectionResetError("request swallowed on purpose")
        if action in self.fake_raw:
            status, raw = self.fake_raw[action]
            return web.Response(status=status, body=raw, content_type="text/html")
        if action in self.fake and not self.drop.get(action):
            status, answer = self.fake[action]
            return web.json_response(
                answer, status=status, content_type="application/x-amz-json-1.1"
            )
        headers = {k: v for k, v in request.headers.items() if k.lower() != "host"}
        async with self._session.request(
            request.method, self.upstream + request.path_qs, headers=headers, data=body
        ) as answer:
            content = await answer.read()
            status, kept = answer.status, dict(answer.headers)
        if self.drop.get(action, 0) > 0:
            self.drop[action] -= 1
            assert request.transport is not None
            request.transport.abort()  # carried out upstream; the caller hears nothing
            raise ConnectionResetError("answer dropped on purpose")
        for name in ("Content-Length", "Transfer-Encoding", "Content-Encoding", "Connection"):
            kept.pop(name, None)
        return web.Response(status=status, body=content, headers=kept)

    async def close(self) -> None:
        if self._wire is not None:
            self._wire.stop()
        if self._session is not None:
            await self._session.close()
        if self._runner is not None:
            await self._runner.cleanup()


async def _die_after_start(db: str, data: str, endpoint: str, arn: str, body: str) -> None:
    settings = sfn_settings(endpoint, arn)
    provider = stepfunctions.factory(settings)
    async with runtime(
        db, data, worker_id="doomed-worker", concurrency=1, providers=[provider]
    ) as rt:
        spec = declared(provider, settings, "crash test")
        op = await rt.ledger.submit(spec, json.loads(body), actor="crash-test")
        print(op.operation_id, flush=True)
        (claim,) = await rt.ledger.store.claim_due(
            "doomed-worker", rt.clock.now(), 1, timedelta(seconds=2)
        )
        held = replace(claim.operation, next_poll_at=claim.was_due)
        held, _ = await rt.ledger.begin_call(
            held, AttemptKind.CREATE, provider.describe(AttemptKind.CREATE, held), "doomed-worker"
        )
        reply = await provider.call(AttemptKind.CREATE, held)
        print(type(reply.outcome).__name__, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)  # the answer arrived; nothing of it is recorded


if __name__ == "__main__":
    asyncio.run(_die_after_start(*sys.argv[1:6]))
