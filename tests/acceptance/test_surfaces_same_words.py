"""Every surface says the same thing about the same operation (issue 20): one operation in
each local state, rendered by the CLI (`status --json`, `explain` as a subprocess), the
dashboard (its page over loopback HTTP) and the MCP tools (`get_job` over stdio from
`jobtrail mcp`), must agree on whether it may be cancelled (and why), what happens next,
and the provider's failure reason, word for word. The rules live in the core; a surface
that decided for itself would disagree here."""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from mcp import Client, StdioServerParameters
from mcp.types import Implementation

from jobtrail.clock import VirtualClock
from jobtrail.core.model import (
    Attempt,
    AttemptKind,
    CancelIntent,
    Operation,
    ResultSummary,
    evolve,
)
from jobtrail.core.states import RemoteStatus, State
from jobtrail.dashboard.access import Access, operators_from_env
from jobtrail.dashboard.web import Dashboard
from jobtrail.ledger import Ledger
from jobtrail.providers.file.config import load_provider_file
from jobtrail.providers.registry import ProviderRegistry
from jobtrail.results import open_results
from jobtrail.store import open_store
from jobtrail.store.changes import Change

from cliutil import JOBTRAIL, Workspace

TOKEN = "alice-token-" + "s" * 20
# The provider's own words for the failures placed below, as its reader records them.
SAID = {"code": "quota_exceeded", "message": "the account ran out of quota"}


@dataclass(frozen=True)
class Words:
    cancellable: bool
    cancel: str
    next: str
    failure: str | None


def _shape(op: Operation, state: State, now: Any) -> tuple[Operation, Attempt | None]:
    """`op` placed in `state` with what that state carries (a remote job, a cancel intent,
    conflicting ids, a result), due now, and for failed ends the provider's own words."""
    past = now - timedelta(minutes=1)
    later = now + timedelta(hours=2)
    fields: dict[str, Any] = {
        "state": state,
        "next_poll_at": None if state.ends_automation else past,
        "create_deadline": later,
        "result_deadline": later,
    }
    if state not in (State.CREATE_PENDING, State.CREATE_UNKNOWN, State.RECONCILIATION):
        fields |= {"remote_job_id": f"job_{state.value}", "remote_state": "running"}
    if state in (State.CANCEL_REQUESTED, State.CANCELLING, State.CANCELLATION_UNCONFIRMED):
        intent = CancelIntent(
            actor="cli:bob",
            reason="wrong account",
            expected_effect="stop",
            requested_at=past,
            request_id=f"req_{state.value}",
        )
        fields |= {"cancel_intent": intent, "cancel_deadline": later, "cancel_sent": True}
        if state is State.CANCEL_REQUESTED:
            fields["cancel_sent"] = False
    if state is State.NEEDS_HUMAN:
        fields |= {"remote_job_id": None, "conflicting_job_ids": ("job_a", "job_b")}
    if state in (State.SUCCEEDED, State.RESULT_VALIDATION_FAILED):
        valid = state is State.SUCCEEDED
        fields["result"] = ResultSummary(valid=valid, problems=() if valid else ("bad rows",))
        fields["remote_state"] = "succeeded"
    attempt = None
    if state in (State.FAILED, State.CANCELLED, State.RESULT_UNAVAILABLE):
        attempt = Attempt(
            attempt_id=f"at_{state.value}",
            operation_id=op.operation_id,
            kind=AttemptKind.STATUS,
            fence=op.fence,
            actor="worker:w1",
            started_at=past,
            finished_at=past,
            request={"method": "GET"},
            outcome="observed",
            http_status=200,
            detail={"provider_error": SAID},
        )
        fields["remote_state"] = state.value
        fields["remote_status"] = RemoteStatus.FAILED
    return evolve(op, **fields), attempt


NO_CANCEL = "observing, its provider declaring no cancel"
IN_FLIGHT = "cancel_requested, its cancel call in flight"
LAPSED = "cancel_requested, its cancel call's worker gone"


async def _in_flight(ledger: Ledger, op: Operation, *, alive: bool) -> None:
    """`op` (in cancel_requested) claimed by worker:w1, which recorded its cancel call's
    intent two hours ago and never its answer (issue 31): its lease still holds, or lapsed.
    (Two hours, so that "2 h ago" reads the same whichever surface is asked first.)"""
    now = ledger.now()
    claimed_at = now if alive else now - timedelta(hours=3)
    (claim,) = await ledger.store.claim_due(
        "worker:w1", claimed_at, 1, timedelta(hours=1), only=op.operation_id
    )
    then = Ledger(ledger.store, clock=VirtualClock(now - timedelta(hours=2)))
    await then.begin_call(claim.operation, AttemptKind.CANCEL, {"method": "POST"}, "worker:w1")


async def _place_every_state(ws: Workspace) -> dict[State | str, str]:
    """One operation in each state, written straight into the ledger (no worker runs), and
    one more whose provider declares no cancel endpoint."""
    folder = ws.root / "providers"
    text = (folder / "simulator.toml").read_text(encoding="utf-8")
    without = text.replace('[cancel]\nmethod = "POST"\npath = "/v1/jobs/{job_id}/cancel"\n', "")
    assert without != text
    (folder / "nocancel.toml").write_text(
        without.replace('name = "simulator"', 'name = "nocancel"')
    )
    spec = load_provider_file(folder / "simulator.toml")
    store = await open_store(str(ws.db))
    ledger = Ledger(store)
    ids: dict[State | str, str] = {}
    places: list[tuple[State | str, State, Path]] = [
        (s, s, folder / "simulator.toml") for s in State
    ]
    places.append((NO_CANCEL, State.OBSERVING, folder / "nocancel.toml"))
    places += [(n, State.CANCEL_REQUESTED, folder / "simulator.toml") for n in (IN_FLIGHT, LAPSED)]
    try:
        for name, state, file in places:
            spec = load_provider_file(file)
            op = await ledger.submit(
                spec, {"account": str(name)}, key=f"in-{name}", actor="cli:ops"
            )
            placed, attempt = _shape(op, state, ledger.now())
            if name in (IN_FLIGHT, LAPSED):
                placed = evolve(placed, next_poll_at=ledger.now() - timedelta(hours=4))
            (done,) = await store.commit(
                [Change(operation=placed, before=op, attempt_started=attempt)]
            )
            assert done.operation is not None and done.operation.state is state
            if name in (IN_FLIGHT, LAPSED):
                await _in_flight(ledger, done.operation, alive=name == IN_FLIGHT)
            ids[name] = op.operation_id
    finally:
        await store.close()
    return ids


def _cli(ws: Workspace, operation_id: str) -> Words:
    status = ws.json("status", operation_id)
    told = ws.run("explain", operation_id).stdout
    (next_line,) = re.findall(r"^  next:       (.*)$", told, re.M)
    why = re.findall(r"^  why:        the provider said (.*)$", told, re.M)
    assert next_line == status["next_step"]  # explain and status say the same next step
    assert why == ([status["failure_reason"]] if status["failure_reason"] else [])
    return Words(
        cancellable=status["cancellable"],
        cancel=status["cancel_note"],
        next=status["next_step"],
        failure=status["failure_reason"],
    )


def _span(page: str, name: str) -> str | None:
    found = re.search(rf'<span id="{name}">(.*?)</span>', page, re.S)
    return None if found is None else html.unescape(found.group(1))


@pytest.fixture
async def dashboard(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[TestClient[Any, Any]]:
    monkeypatch.setenv("JOBTRAIL_OPERATOR_TOKENS", f"alice:{TOKEN}")
    store = await open_store(str(ws.db))
    results = open_results(None, data_dir=ws.root / "data", ledger=str(ws.db))
    providers = ProviderRegistry(connections=1)
    app = web.Application()
    Dashboard(Ledger(store), results, providers, Access(operators_from_env())).add_routes(app)
    try:
        async with TestClient(TestServer(app, host="127.0.0.1")) as client:
            yield client
    finally:
        await providers.close()
        await results.close()
        await store.close()


async def _page(client: TestClient[Any, Any], operation_id: str) -> Words:
    answer = await client.get(
        f"/operations/{operation_id}", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert answer.status == 200
    page = await answer.text()
    offered = f'action="/operations/{operation_id}/cancel"' in page
    cancel, next_, failure = (_span(page, n) for n in ("cancellable", "next", "failure"))
    assert cancel is not None and next_ is not None
    return Words(cancellable=offered, cancel=cancel, next=next_, failure=failure)


async def _tools(ws: Workspace, ids: dict[State | str, str]) -> dict[State | str, Words]:
    # The operations were submitted by people: this agent reads them under a policy that
    # lets it read any operation (by default an agent reads only what it submitted).
    policy = Path(ws.root) / "read-any.toml"
    policy.write_text('[actors."agent:surfaces"]\nread = "any"\n', encoding="utf-8")
    params = StdioServerParameters(
        command=JOBTRAIL,
        args=["--db", str(ws.db), "mcp", "--no-worker", "--actor", "surfaces"],
        env=ws.env() | {"JOBTRAIL_POLICY": str(policy)},
        cwd=Path(ws.root),
    )
    seen = {}
    async with Client(params, client_info=Implementation(name="same", version="1")) as client:
        for state, operation_id in ids.items():
            result = await client.call_tool("get_job", {"operation_id": operation_id})
            job = result.structured_content
            assert not result.is_error and job is not None
            seen[state] = Words(
                cancellable=job["cancellable"],
                cancel=job["cancel_note"],
                next=job["next_step"],
                failure=job["failure_reason"],
            )
    return seen


@pytest.mark.slow  # every state through three surfaces, processes each
async def test_every_state_reads_the_same_on_the_cli_the_dashboard_and_the_mcp_tools(
    ws: Workspace, dashboard: TestClient[Any, Any]
) -> None:
    """For each of the 16 states (and a provider without a cancel, and a call in flight
    with its owner's lease alive or lapsed): cancellability and its reason, the next step
    and the failure reason are the same words through all three surfaces."""
    ids = await _place_every_state(ws)
    agents = await _tools(ws, ids)
    for state, operation_id in ids.items():
        cli = _cli(ws, operation_id)
        page = await _page(dashboard, operation_id)
        assert cli == page == agents[state], state
    # and what they agree on is what the issue asked for
    unconfirmed = agents[State.CANCELLATION_UNCONFIRMED]
    assert (
        "may still be running" in unconfirmed.next
        and "extend --cancel-deadline" in unconfirmed.next
    )
    assert not unconfirmed.cancellable
    assert agents[State.OBSERVING].cancellable and agents[State.SUCCEEDED].failure is None
    # the dashboard offered a Cancel the ledger refused: it ignored capabilities.cancel
    assert not agents[NO_CANCEL].cancellable
    assert "declares no cancel endpoint" in agents[NO_CANCEL].cancel
    # a call in flight is in flight, with its recorded start and owner; a crash only once
    # the owner's lease lapsed with the call unsettled (issue 31)
    flying = agents[IN_FLIGHT].next
    assert flying.startswith("the cancel call at_") and " is in flight since " in flying, flying
    assert flying.endswith("(owner worker:w1)") and "crash" not in flying, flying
    lapsed = agents[LAPSED].next
    assert lapsed.startswith("settle the cancel call at_") and ", sent " in lapsed, lapsed
    assert "interrupted by a crash: the lease of worker:w1 lapsed at " in lapsed
    assert agents[State.CANCELLED].next == "nothing: the provider reported the job cancelled"
    failed = agents[State.FAILED].failure
    assert failed == "quota_exceeded: the account ran out of quota (status answered HTTP 200)"
