"""Running Azure LRO scenarios (tests/azure_lro.py) through jobtrail: the provider file for
each final-state-via, as docs/providers.md describes, the outcome each should reach, and a
runner over a real ledger and the real worker."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from aiohttp import web

from azure_lro import CLIENT_REQUEST_ID, SCENARIOS, AzureService, Scenario
from jobtrail.agent.tools import AgentTools
from jobtrail.clock import VirtualClock
from jobtrail.core.states import Evidence, State
from jobtrail.providers.config import parse_provider
from jobtrail.results import open_results
from jobtrail.runtime import runtime

# monitors whose 200s never state anything readable (LROError*): stopped as a broken contract
UNREADABLE_MONITORS = ("monitor-no-body", "monitor-empty", "monitor-invalid-json")

# -- the provider file for each final-state-via, as docs/providers.md describes -----------


def provider(origin: str, scenario: Scenario) -> dict[str, Any]:
    final = scenario.final
    identity = {
        "original-uri": ["request"],
        "location": ["header:Location", "request"],
    }.get(final, ["request"])
    doc: dict[str, Any] = {
        "name": f"azure-{final}",
        "base_url": origin,
        "timeout": "2s",
        "create": {
            "method": scenario.method,
            "path": "/things/{operation_id}",
            "identity": identity,
            "status_from": [
                "header:Azure-AsyncOperation",
                "header:Operation-Location",
                "header:Location",
                "request",
            ],
            "codes": {"202": "running", "204": "succeeded"},
            "state": "properties.provisioningState",
            "missing": "succeeded",
        },
        "status": {
            "state": ["status", "properties.provisioningState"],
            "codes": {"202": "running", "204": "succeeded", "400": "failed"},
            "missing": "succeeded",
            "ignore_case": True,
            "follow": ["Location"],
            # a Location monitor is done at any 2xx but 202, even with no body; its body,
            # if any, is the resource (whose provisioningState may still say Failed or
            # Canceled) (no later GET: asked again, a monitor may answer otherwise)
            "by_header": {
                "Location": {
                    "state": "properties.provisioningState",
                    "codes": {"200": "done", "201": "done"},
                    "answer_is_result": True,
                }
            },
        },
        "states": {"Succeeded": "succeeded", "Failed": "failed", "Canceled": "cancelled"},
        "poll": {"initial": "1s", "cap": "5s"},
        # monitors that keep their progress in a cookie (lros.js) get it back
        "cookies": "per-operation",
    }
    if scenario.variant == "custom-header":  # the value the service agreed with its client
        doc["headers"] = {"x-ms-client-request-id": CLIENT_REQUEST_ID}
    if scenario.method in ("PUT", "DELETE"):  # idempotent by nature: resent after a 500
        doc["create"]["idempotency"] = {"natural": True}
        doc["reconcile"] = {"same_token": True}
    if final in ("original-uri", "location"):
        doc["result"] = {"path": "{job_url}", "content_type": "application/json"}
    elif final in ("azure-async-operation", "operation-location"):
        doc["result"] = {"from": "status"}
        # the monitor's final answer is the result, kept as read
        for header in ("Azure-AsyncOperation", "Operation-Location"):
            doc["status"]["by_header"][header] = {"answer_is_result": True}
    if scenario.method != "DELETE":
        # done at create (200/201 with a terminal state, a 204 action): that answer is the
        # result (a DELETE has none)
        doc.setdefault("result", {})["at_create"] = True
    if scenario.method in ("POST", "DELETE"):
        # an action (or a delete) may be done with no content: its result is JSON null
        doc.setdefault("result", {})["allow_empty"] = True
    return doc


def expected_state(scenario: Scenario) -> State:
    return {
        "Succeeded": State.SUCCEEDED,
        "Failed": State.FAILED,
        "Canceled": State.CANCELLED,
    }[scenario.state]


def expected_result(scenario: Scenario) -> Any:
    name = scenario.name
    if scenario.method == "DELETE":
        return None
    if scenario.variant == "no-state":  # done at create: that answer is the result
        return {"id": f"/things/{name}", "name": name}
    if scenario.variant == "location-204":
        return None  # checked as JSON null below
    if scenario.variant == "location-result":
        return {"id": "100", "name": name}
    if scenario.variant == "list-result":
        return [{"id": "100", "name": name}]
    if scenario.method in ("PUT", "PATCH"):
        return {
            "id": f"/things/{name}",
            "name": name,
            "properties": {"provisioningState": "Succeeded"},
        }
    if scenario.code == 204:
        return None  # an action done with no content: its result is JSON null
    if scenario.code == 200 or scenario.final == "location":
        return {"result": name}
    return {"id": f"/monitors/{name}", "status": "Succeeded"}


@asynccontextmanager
async def serving() -> AsyncIterator[AzureService]:
    """The service on a loopback port."""
    azure = AzureService()
    runner = web.AppRunner(azure.app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    azure.origin = f"http://127.0.0.1:{port}"
    try:
        yield azure
    finally:
        await runner.cleanup()


async def run_scenarios(service: AzureService, table: list[Scenario], tmp_path: Path) -> list[str]:
    """Submit every scenario, run the worker until idle, and say which ones did not end
    as the guidelines say (state, result, the provider's reason for a failure)."""
    failures = []
    clock = VirtualClock()
    async with runtime(
        str(tmp_path / "ledger.db"), tmp_path / "data", clock=clock, idle_poll=24 * 3600
    ) as rt:
        results = open_results(None, data_dir=tmp_path / "data", ledger=str(tmp_path / "x"))
        ops = {}
        for scenario in table:
            spec = parse_provider(provider(service.origin, scenario))
            op = await rt.ledger.submit(spec, None, actor="test", key=scenario.name)
            # the resource is named by the operation: route it to its scenario
            SCENARIOS[op.operation_id] = scenario
            ops[scenario] = op
        await rt.worker.run(until_idle=True)
        for scenario, op in ops.items():
            op = await rt.ledger.get(op.operation_id)
            want = State(scenario.expect) if scenario.expect else expected_state(scenario)
            if op.state is not want:
                failures.append(f"{scenario.name}: {op.state}, expected {want}")
                continue
            if scenario.variant in UNREADABLE_MONITORS:
                # stopped by the run of unreadable answers, not by any deadline
                last = (await rt.ledger.store.history(op.operation_id))[-1]
                if last.evidence is not Evidence.READS_UNREADABLE:
                    failures.append(f"{scenario.name}: stopped by {last.evidence}")
            expected = expected_result(SCENARIOS[op.operation_id])
            nothing = scenario.code == 204 or scenario.variant == "location-204"
            if want is State.SUCCEEDED and scenario.method == "POST" and nothing:
                assert op.result is not None and op.result.location is not None
                if await results.read(op.result.location) != b"null":
                    failures.append(f"{scenario.name}: a 204 action's result is not null")
            if want is State.SUCCEEDED and expected is not None:
                expected = _renamed(expected, scenario.name, op.operation_id)
                assert op.result is not None and op.result.location is not None
                got = json.loads(await results.read(op.result.location))
                if got != expected:
                    failures.append(f"{scenario.name}: result {got}, expected {expected}")
            # (a Location monitor that ends 200 with provisioningState Failed gives no reason)
            said = scenario.headers != "none" and scenario.variant != "location-body"
            if want is State.FAILED and said:
                # the provider's own reason is shown to people and agents alike
                told = await AgentTools(rt.ledger, worker_running=False).explain_job(
                    op.operation_id
                )
                code = "OperationFailed" if scenario.headers == "Location" else "Failed"
                if scenario.variant in ("monitor-400", "create-400"):
                    code = "BadRequest"
                if f"why:        the provider said {code}: " not in told.explanation:
                    failures.append(f"{scenario.name}: no provider error explained")
    return failures


def _renamed(document: Any, old: str, new: str) -> Any:
    return json.loads(json.dumps(document).replace(old, new))
