"""The operator's dashboard in a real browser (issue 21): headless Chromium (Debian's) driven
by Playwright against `jobtrail serve` run as a user runs it, with a worker and the
simulator over loopback HTTP, under an action policy that lets alice resolve only what she
submitted.

After an action the browser lands on the operation's own page (post/redirect/get), which
says whether it took effect and keeps following the job until the provider confirms the
cancel; a reload sends nothing again. From the filtered list she ticks operations, or
takes all that match, and acts on them at once: the result page names each outcome (done,
refused by the policy, skipped) and follows the cancels until every one has settled, and
reloading it sends nothing twice. With JOBTRAIL_SCREENSHOTS=DIR the pages are saved there
(docs/img for docs/dashboard.md)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from test_dashboard_browser import TOKEN, _free_port, browser, shoot, signed_in

import jobtrail
from jobtrail.core.states import State
from jobtrail.ledger import Ledger
from jobtrail.providers.file.config import load_provider_file
from jobtrail.simulator import SimulatorThread
from jobtrail.store import open_store

from browsers import require_browser
from cliutil import make_workspace, until_healthy
from harness import SECRET
from waits import until_true_async

pytestmark = pytest.mark.browser
__all__ = ["browser"]  # the fixture, used by name below
LONG = {"duration_polls": 100_000}
CONFLICT = {"drop_create_answer": True, "different_id_on_retry": True}
POLICY = '[actors."dashboard:alice"]\nresolve = "own"\n'
ALICE = "dashboard:alice"  # her operations: the ones the policy lets her resolve


@dataclass
class Stack:
    url: str
    db: str
    ids: dict[str, str]


async def _seed(db: str, provider: Path) -> dict[str, str]:
    spec = load_provider_file(provider)
    store = await open_store(db)
    ledger = Ledger(store)
    jobs: list[tuple[str, dict[str, Any], str]] = [
        ("to-cancel", {"account": "c", "_sim": LONG}, "cli:ops"),
        *((f"bulk-{n}", {"account": f"b{n}", "_sim": LONG}, "agent:bulk") for n in range(3)),
        *(
            (f"mine-{n}", {"account": f"m{n}", "_sim": CONFLICT}, "dashboard:alice")
            for n in range(2)
        ),
        ("theirs", {"account": "t", "_sim": CONFLICT}, "cli:ops"),
        ("running-mine", {"account": "r", "_sim": LONG}, ALICE),
        ("invalid", {"account": "v", "_sim": {"bad_checksum": True}}, ALICE),
    ]
    try:
        ids = {}
        for key, body, actor in jobs:
            ids[key] = (await ledger.submit(spec, body, key=key, actor=actor)).operation_id
        return ids
    finally:
        await store.close()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    require_browser()
    tmp = tmp_path_factory.mktemp("dashboard-person")
    with SimulatorThread(token=SECRET) as sim:
        ws = make_workspace(tmp, sim.base_url)
        ids = asyncio.run(_seed(str(ws.db), tmp / "providers" / "simulator.toml"))
        (tmp / "policy.toml").write_text(POLICY, encoding="utf-8")
        port = _free_port()
        src = str(Path(jobtrail.__file__).resolve().parents[1])
        env = ws.env(
            JOBTRAIL_OPERATOR_TOKENS=f"alice:{TOKEN}",
            JOBTRAIL_POLICY=str(tmp / "policy.toml"),
            PYTHONPATH=src,
        )
        code = "from jobtrail.cli.main import main; main()"
        log = tmp / "serve.log"
        with open(log, "wb") as stderr:
            proc = subprocess.Popen(
                [sys.executable, "-c", code, "serve", "--port", str(port)],
                stderr=stderr,
                env=env,
                cwd=tmp,
            )
        url = f"http://127.0.0.1:{port}"
        try:
            until_healthy(url, proc, log)
            yield Stack(url=url, db=str(ws.db), ids=ids)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


async def _state(stack: Stack, key: str) -> State:
    store = await open_store(stack.db, create=False)
    try:
        op = await store.get(stack.ids[key])
        assert op is not None
        return op.state
    finally:
        await store.close()


async def until_state(stack: Stack, key: str, *states: State, timeout: float = 45) -> None:
    async def reached() -> bool:
        return await _state(stack, key) in states

    await until_true_async(reached, timeout, f"{key} in {states}")


async def _audit(stack: Stack, kind: str, operation_id: str | None = None) -> list[Any]:
    store = await open_store(stack.db, create=False)
    try:
        rows = await store.audit_rows(operation_id)
    finally:
        await store.close()
    entries = [json.loads(row.entry) for row in rows]
    return [e for e in entries if e["kind"] == kind]


async def test_after_a_cancel_the_page_follows_the_job_and_a_reload_sends_nothing(
    browser: Any, stack: Stack
) -> None:
    """The cancel lands on the operation's page (not the POST's answer), which says it took
    effect and follows the job by itself until the provider confirms: `cancelled`, while
    the live badge never says it stopped updating; a reload records no second intent."""
    await until_state(stack, "to-cancel", State.OBSERVING)
    page = await signed_in(browser, stack)  # type: ignore[arg-type]
    op_id = stack.ids["to-cancel"]
    await page.goto(f"{stack.url}/operations/{op_id}")
    await page.fill("form.action input[name=reason]", "wrong account")
    await page.click("form.action button")
    await page.wait_for_url(f"**/operations/{op_id}?notice=*")
    notice = await page.text_content(".notice")
    assert notice is not None and "cancel took effect" in notice
    await shoot(page, "action-notice", full_page=False)
    await page.wait_for_function(
        "() => document.querySelector('#facts .state').textContent === 'cancelled'",
        timeout=45_000,
    )
    assert "not updating" not in (await page.text_content(".live") or "")
    await page.reload()
    assert "cancel took effect" in (await page.text_content(".notice") or "")
    assert len(await _audit(stack, "cancel.intent", op_id)) == 1


async def test_bulk_mark_failed_names_each_outcome_with_the_policys_refusal(
    browser: Any, stack: Stack
) -> None:
    """Ticked on the list: alice's two needs_human operations are marked failed, another's
    is refused by the action policy, her running one is skipped (mark failed does not fit
    it); the result page names each outcome and why, and has settled at once."""
    for key in ("mine-0", "mine-1", "theirs"):
        await until_state(stack, key, State.NEEDS_HUMAN)
    page = await signed_in(browser, stack)  # type: ignore[arg-type]
    await page.goto(f"{stack.url}/operations")
    for key in ("mine-0", "mine-1", "theirs", "running-mine"):
        await page.check(f"input[name=id][value={stack.ids[key]}]")
    await page.select_option("form.bulk select[name=action]", "mark-failed")
    await page.fill("form.bulk input[name=reason]", "the provider lost these")
    await shoot(page, "bulk-form", full_page=False)
    await page.click("form.bulk button")
    await page.wait_for_url("**/bulk/bulk_*")
    rows = {
        stack.ids[key]: await page.text_content(f"tr:has(a:text('{stack.ids[key]}')) .outcome")
        for key in ("mine-0", "mine-1", "theirs", "running-mine")
    }
    assert list(rows.values()) == ["done", "done", "refused", "skipped"]
    text = await page.text_content("table.bulk-items") or ""
    assert "may not resolve" in text and "does not apply in state observing" in text
    assert "Settled" in (await page.text_content("#settled") or "")
    await shoot(page, "bulk-result", full_page=False)
    assert await _state(stack, "mine-0") is State.FAILED
    assert await _state(stack, "theirs") is State.NEEDS_HUMAN
    refusals = await _audit(stack, "policy.refused", stack.ids["theirs"])
    assert [r["actor"] for r in refusals] == ["dashboard:alice"]


async def test_bulk_cancel_of_all_that_match_is_watched_until_settled(
    browser: Any, stack: Stack
) -> None:
    """All that match `actor=agent:bulk`, cancelled at once: the result page follows the
    cancels until the provider has confirmed every one, and a reload (or the form sent
    again) records no second action."""
    for n in range(3):
        await until_state(stack, f"bulk-{n}", State.OBSERVING)
    page = await signed_in(browser, stack)  # type: ignore[arg-type]
    await page.goto(f"{stack.url}/operations?actor=agent:bulk")
    assert "3 of 3" in (await page.text_content("#listing") or "")
    await page.select_option("form.bulk select[name=which]", "matching")
    await page.select_option("form.bulk select[name=action]", "cancel")
    await page.fill("form.bulk input[name=reason]", "the nightly run was misconfigured")
    await page.click("form.bulk button")
    await page.wait_for_url("**/bulk/bulk_*")
    bulk_url = page.url
    outcomes = await page.locator("table.bulk-items .outcome").all_text_contents()
    assert outcomes == ["done", "done", "done"]
    await page.wait_for_function(
        "() => document.querySelector('#settled').textContent.startsWith('Settled')",
        timeout=60_000,
    )
    states = await page.locator("table.bulk-items .state").all_text_contents()
    assert states == ["cancelled"] * 3
    await shoot(page, "bulk-settled", full_page=False)
    await page.reload()
    assert page.url == bulk_url
    bulk_id = bulk_url.rsplit("/", 1)[1]
    wholes = [e for e in await _audit(stack, "bulk.action") if e["data"]["bulk_id"] == bulk_id]
    assert len(wholes) == 1 and wholes[0]["data"]["counts"]["done"] == 3
    for n in range(3):
        assert len(await _audit(stack, "cancel.intent", stack.ids[f"bulk-{n}"])) == 1


async def test_a_result_that_failed_validation_offers_three_ways_on(
    browser: Any, stack: Stack
) -> None:
    """The page says a person must act and offers mark failed, accept as is and collect
    again; accepting it as it is ends the operation succeeded, the result's problems kept."""
    await until_state(stack, "invalid", State.RESULT_VALIDATION_FAILED)
    page = await signed_in(browser, stack)  # type: ignore[arg-type]
    op_id = stack.ids["invalid"]
    await page.goto(f"{stack.url}/operations/{op_id}")
    options = await page.locator("select[name=decision] option").all_text_contents()
    assert options == ["mark failed", "accept the result as it is", "collect the result again"]
    assert "a person must act" in (await page.text_content("#next") or "")
    await shoot(page, "validation-failed", full_page=False)
    await page.select_option("select[name=decision]", "accept-as-is")
    await page.fill("form.action input[name=reason]", "the checksum header is known wrong")
    await page.click("form.action button")
    await page.wait_for_url(f"**/operations/{op_id}?notice=*")
    assert "resolve took effect" in (await page.text_content(".notice") or "")
    assert await _state(stack, "invalid") is State.SUCCEEDED
