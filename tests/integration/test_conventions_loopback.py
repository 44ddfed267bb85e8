"""Provider-file conventions over loopback HTTP with a real ledger and the real worker:
small servers shaped like the OpenAI Batch and Google AIP-151 references, and a body-less
DELETE submitted from the command line."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from aiohttp import web
from click.testing import CliRunner

from jobtrail.cli.main import cli
from jobtrail.clock import VirtualClock
from jobtrail.core.model import AttemptKind
from jobtrail.core.states import State
from jobtrail.presentation.explain import explain_text
from jobtrail.providers.file.config import parse_provider
from jobtrail.results import open_results
from jobtrail.services.runtime import Runtime, runtime

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@asynccontextmanager
async def serve(routes: list[tuple[str, str, Handler]]) -> AsyncIterator[str]:
    app = web.Application()
    for method, path, handler in routes:
        app.router.add_route(method, path, handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


@asynccontextmanager
async def ledger(tmp_path: Path) -> AsyncIterator[Runtime]:
    async with runtime(
        str(tmp_path / "ledger.db"), tmp_path / "data", clock=VirtualClock(), idle_poll=86400
    ) as rt:
        yield rt


class OpenAIBatches:
    """Batches as the OpenAI reference describes them: `metadata` kept, a list of every
    batch, `output_file_id` naming a JSON Lines file; the first create answer is lost."""

    def __init__(self) -> None:
        self.batches: dict[str, dict[str, Any]] = {}
        self.reads = 0
        self.creates = 0

    async def create(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.creates += 1
        batch_id = f"batch_{len(self.batches) + 1}"
        self.batches[batch_id] = {
            "id": batch_id,
            "object": "batch",
            "status": "validating",
            "metadata": body.get("metadata"),
            "output_file_id": None,
        }
        self.batches["batch_other"] = {"id": "batch_other", "metadata": {"jobtrail_ref": "x"}}
        assert request.transport is not None
        request.transport.close()  # the job exists; its create answer never arrives
        return web.Response()

    async def list(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": list(self.batches.values())})

    async def get(self, request: web.Request) -> web.Response:
        batch = self.batches[request.match_info["id"]]
        self.reads += 1
        if self.reads >= 2:
            batch |= {"status": "completed", "output_file_id": "file-out-1"}
        return web.json_response(batch)

    async def content(self, request: web.Request) -> web.Response:
        assert request.match_info["id"] == "file-out-1"
        lines = [
            {"custom_id": "req-1", "response": {"status_code": 200, "body": {}}, "error": None},
            {
                "custom_id": "req-2",
                "response": {
                    "status_code": 429,
                    "body": {"error": {"code": "rate_limit_exceeded", "message": "slow down"}},
                },
                "error": None,
            },
        ]
        text = "".join(json.dumps(line) + "\n" for line in lines)
        return web.Response(text=text, content_type="application/octet-stream")


async def test_an_openai_style_batch_is_found_by_its_metadata_and_its_output_file_read(
    tmp_path: Path,
) -> None:
    """A batch whose create answer was lost is found by listing batches and matching the
    reference jobtrail put in `metadata`; never created twice; its result is the JSON
    Lines file named by `output_file_id`, with per-item outcomes by `custom_id` and the
    provider's reason for each failed item."""
    api = OpenAIBatches()
    routes = [
        ("POST", "/v1/batches", api.create),
        ("GET", "/v1/batches", api.list),
        ("GET", "/v1/batches/{id}", api.get),
        ("GET", "/v1/files/{id}/content", api.content),
    ]
    async with serve(routes) as origin, ledger(tmp_path) as rt:
        doc = {
            "name": "openai-like",
            "base_url": origin,
            "timeout": "2s",
            "create": {
                "path": "/v1/batches",
                "client_reference": {"field": "metadata.jobtrail_ref"},
                "job_id": "id",
                "state": "status",
            },
            "status": {"path": "/v1/batches/{job_id}", "state": "status"},
            "states": {"validating": "running", "completed": "succeeded", "failed": "failed"},
            "result": {
                "link": ["output_file_id", "error_file_id"],
                "path": "/v1/files/{link}/content",
                "format": "jsonl",
                "items": {"ref": "custom_id", "status": "response.status_code", "success": ["200"]},
            },
            "reconcile": {
                "list": {"path": "/v1/batches", "job_id": "id", "match": "metadata.jobtrail_ref"}
            },
        }
        body = {"input_file_id": "file-in", "endpoint": "/v1/chat/completions", "metadata": {}}
        op = await rt.ledger.submit(parse_provider(doc), body, actor="test")
        await rt.worker.run(until_idle=True)
        op = await rt.ledger.get(op.operation_id)
        assert op.state is State.SUCCEEDED, op.state
        assert api.creates == 1 and op.remote_job_id == "batch_1"
        assert api.batches["batch_1"]["metadata"] == {"jobtrail_ref": op.operation_id}
        assert op.result is not None and op.result.items is not None
        assert (op.result.records, op.result.items.failed_refs) == (2, ("req-2",))
        store = rt.ledger.store
        text = explain_text(
            op,
            await store.history(op.operation_id),
            await store.attempts(op.operation_id),
            await store.observations(op.operation_id),
            rt.ledger.now(),
        )
        # each failed item's own reason, as the provider gave it, is kept and shown
        assert "1 failed item(s), first req-2 (rate_limit_exceeded: slow down)" in text


class GoogleOperations:
    """Long-running operations as AIP-151 describes them: `name`, `done`, `error`,
    `response`; the request id travels as a query parameter."""

    def __init__(self, fail: bool) -> None:
        self.fail, self.reads, self.request_ids = fail, 0, list[str]()

    async def create(self, request: web.Request) -> web.Response:
        self.request_ids.append(request.query.get("requestId", ""))
        return web.json_response({"name": "operations/op-7", "metadata": {"state": "RUNNING"}})

    async def get(self, request: web.Request) -> web.Response:
        assert request.match_info["id"] == "op-7"
        self.reads += 1
        if self.reads < 2:
            return web.json_response({"name": "operations/op-7", "done": False})
        if self.fail:
            error = {"code": 3, "message": "the input table is empty"}
            return web.json_response({"name": "operations/op-7", "done": True, "error": error})
        response = {"@type": "type.googleapis.com/Thing", "rows": 3}
        return web.json_response({"name": "operations/op-7", "done": True, "response": response})


def google_doc(origin: str) -> dict[str, Any]:
    return {
        "name": "google-like",
        "base_url": origin,
        "timeout": "2s",
        "create": {
            "path": "/v1/things",
            "idempotency": {"query": "requestId"},
            "identity": ["name:name"],
        },
        "status": {"path": "/v1/{job_id}", "done": "done", "cancelled_codes": ["1"]},
        "result": {"from": "status", "field": "response"},
    }


async def test_a_google_style_operation_is_read_by_done_and_its_response_kept(
    tmp_path: Path,
) -> None:
    """The token goes in the `requestId` query parameter, the operation is named by its
    resource name, `done` with a `response` is success and the response is the result."""
    api = GoogleOperations(fail=False)
    routes = [("POST", "/v1/things", api.create), ("GET", "/v1/operations/{id}", api.get)]
    async with serve(routes) as origin, ledger(tmp_path) as rt:
        op = await rt.ledger.submit(parse_provider(google_doc(origin)), {"x": 1}, actor="t")
        await rt.worker.run(until_idle=True)
        op = await rt.ledger.get(op.operation_id)
        assert op.state is State.SUCCEEDED and op.remote_job_id == "operations/op-7"
        assert api.request_ids == [op.idempotency_token]
        assert op.result is not None and op.result.location is not None
        stored = open_results(None, data_dir=tmp_path / "data", ledger=str(tmp_path / "l"))
        kept = json.loads(await stored.read(op.result.location))
        assert kept == {"@type": "type.googleapis.com/Thing", "rows": 3}


async def test_a_google_style_failure_is_explained_in_the_providers_words(
    tmp_path: Path,
) -> None:
    """`done` with an `error` is a failure, and `explain` gives the provider's code and
    message."""
    api = GoogleOperations(fail=True)
    routes = [("POST", "/v1/things", api.create), ("GET", "/v1/operations/{id}", api.get)]
    async with serve(routes) as origin, ledger(tmp_path) as rt:
        op = await rt.ledger.submit(parse_provider(google_doc(origin)), {"x": 1}, actor="t")
        await rt.worker.run(until_idle=True)
        op = await rt.ledger.get(op.operation_id)
        assert op.state is State.FAILED
        store = rt.ledger.store
        text = explain_text(
            op,
            await store.history(op.operation_id),
            await store.attempts(op.operation_id),
            await store.observations(op.operation_id),
            rt.ledger.now(),
        )
        assert "why:        the provider said 3: the input table is empty" in text


async def test_a_body_less_delete_is_submitted_without_a_body(tmp_path: Path) -> None:
    """`jobtrail submit` without --body records a DELETE; it is sent with no body and no
    Content-Type, and its 204 means done."""
    seen: list[tuple[str, bytes, str | None]] = []

    async def delete(request: web.Request) -> web.Response:
        seen.append((request.method, await request.read(), request.headers.get("Content-Type")))
        return web.Response(status=204)

    async with serve([("DELETE", "/things/{name}", delete)]) as origin:
        provider = tmp_path / "deleter.toml"
        provider.write_text(
            f'name = "deleter"\nbase_url = "{origin}"\n'
            '[create]\nmethod = "DELETE"\npath = "/things/{operation_id}"\n'
            'identity = ["request"]\ncodes = { "204" = "succeeded" }\n'
            "idempotency = { natural = true }\n[status]\n"
        )
        db = tmp_path / "cli.db"
        args = ["--db", str(db), "submit", str(provider), "--json"]
        # the command runs its own event loop: give it a thread of its own
        done = await asyncio.to_thread(CliRunner().invoke, cli, args, catch_exceptions=False)
        assert done.exit_code == 0, done.output
        op_id = json.loads(done.output)["operation_id"]
        async with runtime(str(db), tmp_path / "data", idle_poll=86400) as rt:
            await rt.worker.run(until_idle=True)
            op = await rt.ledger.get(op_id)
            attempts = await rt.ledger.store.attempts(op_id)
    assert op.request.body is None and op.state is State.SUCCEEDED
    assert seen == [("DELETE", b"", None)]
    assert [a.kind for a in attempts] == [AttemptKind.CREATE, AttemptKind.RESULT]
