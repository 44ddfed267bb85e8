"""The agent tools (`jobtrail.agent.tools`) over a real SQLite ledger, without MCP: input
checks, idempotent submit, waiting, cancel intent, results whole or previewed."""

from __future__ import annotations

import tomllib
from collections.abc import AsyncIterator
from dataclasses import asdict, fields
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from jobtrail.agent.content import INLINE_LIMIT, read_stored
from jobtrail.agent.tools import WAIT_CAP_SECONDS, WAIT_POLL_SECONDS, AgentTools
from jobtrail.clock import SystemClock, VirtualClock
from jobtrail.errors import InvalidInput, KeyConflict, NotFound, NotPermitted
from jobtrail.ledger import Ledger
from jobtrail.presentation.views import OperationView, operation_view
from jobtrail.providers.file.config import ProviderSpec, parse_provider
from jobtrail.providers.registry import ProviderRegistry
from jobtrail.results.files import FileResults
from jobtrail.simulator import Simulator
from jobtrail.store import open_store
from jobtrail.worker.loop import Worker
from jobtrail.worker.runner import Runner

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "tools-test-token"


def spec_for(base_url: str) -> ProviderSpec:
    doc = tomllib.loads((ROOT / "providers" / "simulator.toml").read_text(encoding="utf-8"))
    return parse_provider(doc | {"base_url": base_url})


class FakeTime:
    """A monotonic clock that sleeping advances, with a hook run on each sleep."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []
        self.on_sleep: Any = None

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        if self.on_sleep is not None:
            await self.on_sleep()


@pytest.fixture
async def ledger(tmp_path: Path) -> AsyncIterator[Ledger]:
    store = await open_store(str(tmp_path / "l.db"))
    yield Ledger(store)
    await store.close()


@pytest.fixture
def fake_time() -> FakeTime:
    return FakeTime()


@pytest.fixture
def looked_up() -> list[str]:
    return []


@pytest.fixture
def tools(ledger: Ledger, fake_time: FakeTime, looked_up: list[str]) -> AgentTools:
    spec = spec_for("http://127.0.0.1:9")  # never called: nothing here sends

    def find(name: str) -> ProviderSpec:
        looked_up.append(name)
        return spec

    return AgentTools(
        ledger, worker_running=True, find=find, sleep=fake_time.sleep, monotonic=fake_time.monotonic
    )


async def ask(tools: AgentTools, body: Any, key: str = "k1", actor: str = "agent:t") -> Any:
    return await tools.submit_job("reports", body, key=key, reason="test", actor=actor)


async def test_submit_records_and_repeats_by_key(tools: AgentTools) -> None:
    """A new key records an operation; the same key and request return it, marked existing."""
    first = await ask(tools, {"account": "a"})
    again = await ask(tools, {"account": "a"})
    assert first.state == "create_pending" and first.existing is False
    assert again.operation_id == first.operation_id and again.existing is True
    assert "worker sends it" in first.next_step


async def test_changed_request_under_a_key_is_refused(tools: AgentTools) -> None:
    """A changed request under a used key raises KeyConflict naming what to do."""
    await ask(tools, {"account": "a"})
    with pytest.raises(KeyConflict, match="use a new key"):
        await ask(tools, {"account": "b"})


@pytest.mark.parametrize("name", ["../providers/x", "/etc/passwd", "x.toml", "", "a b"])
async def test_provider_paths_are_refused_before_any_lookup(
    tools: AgentTools, looked_up: list[str], name: str
) -> None:
    """A provider is a name: paths and odd strings are refused without reading any file."""
    with pytest.raises(InvalidInput, match="name of a configured provider"):
        await tools.submit_job(name, {}, key="k", reason="r", actor="a")
    assert looked_up == []


async def test_path_values_reach_the_ledger_checked(tools: AgentTools) -> None:
    """`path` fills the create path's placeholders; one the path does not have is refused."""
    with pytest.raises(InvalidInput, match=r"no placeholder \{group\}"):
        await tools.submit_job(
            "reports", {"a": 1}, key="k", reason="r", actor="a", path={"group": "rg1"}
        )


async def test_request_must_be_an_object(tools: AgentTools) -> None:
    """A request body that is not a JSON object is refused."""
    with pytest.raises(InvalidInput, match="JSON object"):
        await ask(tools, [1, 2])


async def test_get_job_shows_the_actor_and_what_comes_next(tools: AgentTools) -> None:
    """get_job carries the recorded actor, the next step and the transitions so far."""
    sent = await ask(tools, {"account": "a"}, actor="agent:claude")
    job = await tools.get_job(sent.operation_id, actor="cli:tester")
    assert job.actor == "agent:claude" and job.state == "create_pending"
    assert job.next_step.startswith("send create") and job.recent_transitions == []


async def test_get_job_is_the_operation_view_without_the_token(
    tools: AgentTools, ledger: Ledger
) -> None:
    """get_job answers the operation's view, the one `status --json` prints, field for field
    under the same names (`next_step`, `cancel_note`, `failure_reason`), and none of what
    only the record holds (the idempotency token, the fingerprint)."""
    sent = await ask(tools, {"account": "a"}, actor="agent:claude")
    job = await tools.get_job(sent.operation_id, actor="cli:tester")
    op = await ledger.get(sent.operation_id)
    record = operation_view(op, ledger.now(), attempts=await ledger.attempts(op.operation_id))
    shared = {f.name for f in fields(OperationView)}
    assert {"next_step", "cancel_note", "failure_reason"} <= shared
    assert {k: v for k, v in asdict(job).items() if k in shared} == {
        k: v for k, v in record.json().items() if k in shared
    }
    assert "idempotency_token" not in asdict(job) and "request_fingerprint" not in asdict(job)
    assert op.idempotency_token not in repr(job)


async def test_unknown_operation_points_to_list_jobs(tools: AgentTools) -> None:
    """An unknown operation id is NotFound, pointing the agent at list_jobs."""
    with pytest.raises(NotFound, match="list_jobs"):
        await tools.get_job("op_missing", actor="cli:tester")


async def test_wait_times_out_polling_every_quarter_second(
    tools: AgentTools, fake_time: FakeTime
) -> None:
    """With no change, wait_job returns changed=False after the timeout, polling at 0.25 s."""
    sent = await ask(tools, {"account": "a"})
    waited = await tools.wait_job(sent.operation_id, 1.0, actor="cli:tester")
    assert waited.changed is False and waited.state == "create_pending"
    assert fake_time.sleeps == [WAIT_POLL_SECONDS] * 4 and waited.waited_seconds == 1.0


async def test_wait_is_capped(tools: AgentTools, fake_time: FakeTime) -> None:
    """A timeout above the cap waits only the cap; a negative one does not wait."""
    sent = await ask(tools, {"account": "a"})
    assert (
        await tools.wait_job(sent.operation_id, 10_000, actor="cli:tester")
    ).waited_seconds == WAIT_CAP_SECONDS
    fake_time.sleeps.clear()
    assert (await tools.wait_job(sent.operation_id, -5, actor="cli:tester")).waited_seconds == 0
    assert fake_time.sleeps == []


async def test_wait_returns_when_the_state_changes(
    tools: AgentTools, ledger: Ledger, fake_time: FakeTime, tmp_path: Path
) -> None:
    """wait_job returns at the first poll that sees a new state, with changed=True."""
    sent = await ask(tools, {"account": "a"})
    await tools.cancel_job(sent.operation_id, reason="changed my mind", actor="agent:t")
    registry = ProviderRegistry()
    runner = Runner(
        ledger, registry, FileResults(tmp_path), actor="w1", lease_for=timedelta(seconds=30)
    )

    async def worker_step() -> None:
        # No call is needed: a cancel before any create is a withdrawal.
        await Worker(runner, SystemClock()).run(until_idle=True)
        fake_time.on_sleep = None

    fake_time.on_sleep = worker_step
    try:
        waited = await tools.wait_job(sent.operation_id, 60, actor="cli:tester")
    finally:
        await registry.close()
    assert waited.changed is True and waited.state == "failed" and waited.ends_automation
    assert len(fake_time.sleeps) == 1
    assert waited.recent_transitions[-1].cause.startswith("human_request:")


async def test_cancel_before_the_create_keeps_the_intent(tools: AgentTools) -> None:
    """A cancel on a pending create records the intent by the agent and claims nothing more."""
    sent = await ask(tools, {"account": "a"}, actor="agent:x")
    asked = await tools.cancel_job(sent.operation_id, reason="not needed", actor="agent:x")
    again = await tools.cancel_job(sent.operation_id, reason="twice", actor="agent:x")
    assert asked.state == "create_pending" and asked.cancel_requested_by == "agent:x"
    assert again.cancel_requested_by == "agent:x" and again.cancel_reason == "not needed"
    with pytest.raises(NotPermitted, match="only operations it submitted"):
        await tools.cancel_job(sent.operation_id, reason="not mine", actor="agent:y")
    assert asked.remote_may_still_run is False and "withdraw" in asked.next_step
    with pytest.raises(InvalidInput, match="reason"):
        await tools.cancel_job(sent.operation_id, reason=" ", actor="agent:x")


async def test_list_filters_by_state_and_refuses_unknown_states(tools: AgentTools) -> None:
    """list_jobs filters by state, caps the limit, and names the states on a typo."""
    for n in range(3):
        await ask(tools, {"n": n}, key=f"k{n}")
    assert (await tools.list_jobs("create_pending", 2, actor="cli:tester")).count == 2
    assert (await tools.list_jobs("succeeded", 10, actor="cli:tester")).count == 0
    assert (await tools.list_jobs(None, 10_000, actor="cli:tester")).count == 3
    with pytest.raises(InvalidInput, match="create_pending"):
        await tools.list_jobs("done", 5, actor="cli:tester")


async def test_explain_tells_who_asked(tools: AgentTools) -> None:
    """explain_job is the views' explanation, starting with who asked and why."""
    sent = await ask(tools, {"account": "a"}, actor="agent:claude")
    story = await tools.explain_job(sent.operation_id, actor="cli:tester")
    assert story.explanation.startswith(f"Operation {sent.operation_id} — create_pending")
    assert "submitted by agent:claude: test" in story.explanation


async def test_no_result_yet_is_an_answer_not_an_error(tools: AgentTools) -> None:
    """get_result before a result exists says so, with what jobtrail waits for."""
    sent = await ask(tools, {"account": "a"})
    result = await tools.get_result(sent.operation_id, actor="cli:tester")
    assert result.available is False and result.content is None
    assert "no result yet" in result.note


async def test_results_whole_or_previewed_from_the_simulator(
    ledger: Ledger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Small results come back whole; large ones as their path and a bounded preview."""
    monkeypatch.setenv("REPORTS_API_TOKEN", TOKEN)
    sim = Simulator(token=TOKEN)
    spec = spec_for(await sim.start())
    clock = VirtualClock()
    ledger = Ledger(ledger.store, clock=clock)
    tools = AgentTools(ledger, worker_running=True, find=lambda name: spec)
    small = await ask(tools, {"account": "s", "_sim": {"failed_items": 1}}, key="small")
    large = await ask(tools, {"account": "l", "_sim": {"items": 4000}}, key="large")
    registry = ProviderRegistry()
    runner = Runner(
        ledger, registry, FileResults(tmp_path), actor="w1", lease_for=timedelta(seconds=60)
    )
    try:
        await Worker(runner, clock).run(until_idle=True)
    finally:
        await registry.close()
        await sim.close()
    whole = await tools.get_result(small.operation_id, actor="cli:tester")
    assert whole.state == "succeeded" and whole.valid is True and whole.preview is None
    assert whole.content is not None and whole.content.startswith("id,status,value\n")
    assert whole.items is not None and whole.items.failed_refs == ["item-3"]
    big = await tools.get_result(large.operation_id, actor="cli:tester")
    assert big.size is not None and big.size > INLINE_LIMIT and big.content is None
    assert big.preview is not None and big.preview.startswith("id,status,value\nitem-1,")
    assert big.location is not None and str(big.location) in big.note


async def test_unreadable_or_binary_content_is_described(tmp_path: Path) -> None:
    """Missing or binary stored content is described in the note, never raised."""
    missing = await read_stored(str(tmp_path / "gone"))
    assert missing.content is None and "cannot be read" in missing.note
    blob = tmp_path / "blob"
    blob.write_bytes(b"\xff\xfe\x00binary")
    binary = await read_stored(str(blob))
    assert binary.content is None and binary.preview is None and "binary" in binary.note


async def test_preview_never_splits_a_character(tmp_path: Path) -> None:
    """A preview cut inside a multi-byte character drops the partial character."""
    text = tmp_path / "text"
    text.write_bytes(("é" * INLINE_LIMIT).encode())
    read = await read_stored(str(text))
    assert read.content is None and read.preview == "é" * 2048
