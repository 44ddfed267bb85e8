"""`jobtrail demo`: the simulator, a fresh ledger and the worker, showing how each failure
the design names is handled. Everything here is the real thing, on loopback."""

from __future__ import annotations

import asyncio
import os
import secrets
import tomllib
from dataclasses import dataclass
from datetime import timedelta
from importlib import resources
from pathlib import Path
from typing import Any

from jobtrail.core.audit import ChainReport, verify
from jobtrail.core.model import AttemptKind, Operation
from jobtrail.core.states import State
from jobtrail.profiles import shipped_profile
from jobtrail.providers.file.config import parse_provider
from jobtrail.services.runtime import runtime
from jobtrail.simulator import Simulator


@dataclass(frozen=True)
class Scenario:
    name: str
    body: dict[str, Any]
    cancel: bool = False
    profile: str | None = None  # a shipped vendor profile, against its simulator mode


# Two batch APIs that speak other conventions than the article's, through their shipped
# profiles: both lose the create answer. OpenAI keeps our reference in `metadata`, so the
# batch is found by listing; Anthropic keeps nothing of ours, so a person must decide.
VENDOR_BATCHES: dict[str, dict[str, Any]] = {
    "openai-batch": {
        "input_file_id": "file-demo",
        "endpoint": "/v1/chat/completions",
        "completion_window": "24h",
    },
    "anthropic-batch": {
        "requests": [
            {"custom_id": f"q{n}", "params": {"model": "m", "max_tokens": 64, "messages": []}}
            for n in range(3)
        ]
    },
}


SCENARIOS = [
    Scenario("happy path", {"account": "acct_218", "format": "csv"}),
    Scenario(
        "create answer dropped", {"account": "acct_219", "_sim": {"drop_create_answer": True}}
    ),
    Scenario(
        "503 + Retry-After",
        {
            "account": "acct_220",
            "_sim": {"throttle_status": {"status": 503, "retry_after": 2, "times": 2}},
        },
    ),
    Scenario("cancel honoured", {"account": "acct_221", "_sim": {"never_finish": True}}, True),
    Scenario(
        "cancel races completion",
        {"account": "acct_222", "_sim": {"cancel": "race", "duration_polls": 30}},
        True,
    ),
    Scenario(
        "batch with failed items",
        {"account": "acct_223", "items": 500, "_sim": {"failed_items": 2}},
    ),
    Scenario("result fails validation", {"account": "acct_224", "_sim": {"bad_checksum": True}}),
    Scenario(
        "contract violation",
        {
            "account": "acct_225",
            "_sim": {"drop_create_answer": True, "different_id_on_retry": True},
        },
    ),
    Scenario(
        "OpenAI batch, answer lost",
        VENDOR_BATCHES["openai-batch"],
        profile="openai-batch",
    ),
    Scenario(
        "Anthropic batch, answer lost",
        VENDOR_BATCHES["anthropic-batch"],
        profile="anthropic-batch",
    ),
]


@dataclass(frozen=True)
class Row:
    scenario: str
    op: Operation
    attempts: int
    status_calls: int
    outcome: str


def _provider(base_url: str) -> dict[str, Any]:
    text = (resources.files("jobtrail") / "demo_provider.toml").read_text(encoding="utf-8")
    doc = tomllib.loads(text)
    doc["base_url"] = base_url
    return doc


def _vendor_provider(name: str, base_url: str) -> dict[str, Any]:
    """A shipped profile pointed at its simulator mode, using the demo's credential (so a
    real vendor key in the environment is never sent anywhere), with a short first poll."""
    profile = shipped_profile(name)
    assert profile is not None, name
    doc = tomllib.loads(profile.text)
    prefix = {"openai-batch": "/openai", "anthropic-batch": "/anthropic"}[name]
    doc["base_url"] = base_url + prefix
    doc["auth"] = {**doc["auth"], "env": "REPORTS_API_TOKEN"}
    doc["poll"] = {"initial": "200ms", "cap": "1s"}  # a real batch is polled every 30 s+
    return doc


def _outcome(op: Operation) -> str:
    result = op.result
    match op.state:
        case State.SUCCEEDED if result and result.items and result.items.failed:
            return (
                f"{result.items.succeeded} items succeeded, {result.items.failed} failed "
                f"({', '.join(result.items.failed_refs)})"
            )
        case State.SUCCEEDED if op.cancel_intent:
            return "succeeded, not cancelled (reported, not hidden; explain gives the order)"
        case State.SUCCEEDED:
            return f"result validated ({result.size if result else 0} bytes)"
        case State.RESULT_VALIDATION_FAILED if result:
            return "; ".join(result.problems)
        case State.NEEDS_HUMAN if op.conflicting_job_ids:
            return f"same token, two job ids: {', '.join(op.conflicting_job_ids)}"
        case State.NEEDS_HUMAN:
            return "lost answer, nothing to find the job by: never resent, a person decides"
        case State.CANCELLED:
            return "the provider reported the job cancelled"
        case _:
            return op.state.value


async def run_demo(
    db: str, data: Path, progress: Any = None, *, results: str | None = None
) -> tuple[list[Row], ChainReport]:
    token = os.environ.setdefault("REPORTS_API_TOKEN", "demo_" + secrets.token_hex(16))
    sim = Simulator(token=token)
    base_url = await sim.start()
    try:
        spec = parse_provider(_provider(base_url))
        specs = {name: parse_provider(_vendor_provider(name, base_url)) for name in VENDOR_BATCHES}
        for name in VENDOR_BATCHES:
            sim.set_vendor_faults(name, {"drop_create_answer": 1, "failed_items": 1})
        async with runtime(
            db, data, worker_id="demo-worker", concurrency=20, idle_poll=0.2, results=results
        ) as rt:
            ops = [
                await rt.ledger.submit(
                    specs[s.profile] if s.profile else spec,
                    s.body,
                    actor="demo-agent",
                    authorized_by="demo-operator",
                    reason=s.name,
                    key=f"demo-{i}-{secrets.token_hex(4)}",
                    cancel_deadline=timedelta(seconds=20),
                )
                for i, s in enumerate(SCENARIOS)
            ]
            worker = asyncio.create_task(rt.worker.run(until_idle=True))
            for scenario, op in zip(SCENARIOS, ops, strict=True):
                if scenario.cancel:
                    await _when_observing(rt.ledger, op.operation_id)
                    await rt.ledger.cancel(
                        op.operation_id, actor="demo-operator", reason="no longer needed"
                    )
            while not worker.done():
                if progress is not None:
                    progress(await rt.ledger.count_by_state())
                await asyncio.wait([worker], timeout=0.5)
            await worker
            rows = []
            for scenario, op in zip(SCENARIOS, ops, strict=True):
                final = await rt.ledger.get(op.operation_id)
                attempts = await rt.ledger.attempts(op.operation_id)
                status = sum(a.kind is AttemptKind.STATUS for a in attempts)
                rows.append(Row(scenario.name, final, len(attempts), status, _outcome(final)))
            verdict = verify(await rt.ledger.audit_rows(), None)
        return rows, verdict
    finally:
        await sim.close()


async def _when_observing(ledger: Any, operation_id: str) -> None:
    for _ in range(200):
        op = await ledger.get(operation_id)
        if op.state in (State.OBSERVING, State.ACCEPTED) or op.state.ends_automation:
            return
        await asyncio.sleep(0.05)
