"""The dashboard in a real browser: headless Chromium (Debian's package) driven by Playwright
against `jobtrail serve` run as a user runs it, with the simulator over loopback HTTP.

It loads the pages, filters, opens an operation, cancels with a token and sees the cancel in
the audit log, is refused without one, and sees a change arrive without a reload. With
JOBTRAIL_SCREENSHOTS=DIR it saves the main pages there (docs/img for docs/dashboard.md).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import jobtrail
from jobtrail.core.states import State
from jobtrail.ledger import Ledger
from jobtrail.providers.file.config import load_provider_file
from jobtrail.simulator import SimulatorThread
from jobtrail.store import open_store

from browsers import ARGS, chromium_path, require_browser
from cliutil import make_workspace, until_healthy
from harness import SECRET
from waits import until_true_async

pytestmark = pytest.mark.browser
TOKEN = "alice-" + secrets.token_hex(16)
LONG = {"duration_polls": 100_000}  # a job that keeps running through the whole module
CONFLICT = {"drop_create_answer": True, "different_id_on_retry": True}  # needs a person


@dataclass
class Stack:
    url: str
    db: str
    ids: dict[str, str]  # operation ids by key


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _seed(db: str, provider: Path) -> dict[str, str]:
    spec = load_provider_file(provider)
    store = await open_store(db)
    ledger = Ledger(store)
    jobs: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
        ("long-job", {"account": "acct_218", "_sim": LONG}, {}),
        (
            "late-job",
            {"account": "acct_300", "_sim": LONG},
            {"result_deadline": timedelta(seconds=1)},
        ),
        ("feb-report", {"account": "acct_101", "format": "csv"}, {"reason": "February report"}),
        (
            "rejected-job",
            {"account": "x", "_sim": {"reject_create": {"status": 422, "message": "<b>bad</b>"}}},
            {},
        ),
        ("hostile-job", {"account": "h", "_sim": {**LONG, "hostile_text": True}}, {}),
        ("conflict-job", {"account": "c", "_sim": CONFLICT}, {}),
        *((f"batch-{n}", {"account": f"acct_{n}"}, {"actor": "agent:nightly"}) for n in range(6)),
    ]
    try:
        ids = {}
        for key, body, options in jobs:
            options = {"actor": "cli:ops", **options}
            ids[key] = (await ledger.submit(spec, body, key=key, **options)).operation_id
        return ids
    finally:
        await store.close()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    require_browser()
    tmp = tmp_path_factory.mktemp("dashboard")
    with SimulatorThread(token=SECRET) as sim:
        ws = make_workspace(tmp, sim.base_url)
        ids = asyncio.run(_seed(str(ws.db), tmp / "providers" / "simulator.toml"))
        port = _free_port()
        src = str(Path(jobtrail.__file__).resolve().parents[1])
        env = ws.env(JOBTRAIL_OPERATOR_TOKENS=f"alice:{TOKEN}", PYTHONPATH=src)
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


async def _state_of(stack: Stack, key: str) -> State:
    store = await open_store(stack.db, create=False)
    try:
        op = await store.get(stack.ids[key])
        assert op is not None
        return op.state
    finally:
        await store.close()


async def until_state(stack: Stack, key: str, *states: State, timeout: float = 30) -> None:
    async def reached() -> bool:
        return await _state_of(stack, key) in states

    await until_true_async(reached, timeout, f"{key} in {states}")


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    require_browser()
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        chromium = await pw.chromium.launch(executable_path=chromium_path(), args=ARGS)
        try:
            yield chromium
        finally:
            await chromium.close()


async def signed_in(browser: Any, stack: Stack) -> Any:
    """A page in a fresh browser context, signed in through the login form."""
    context = await browser.new_context(viewport={"width": 1280, "height": 860})
    page = await context.new_page()
    page.set_default_timeout(15_000)
    first = await page.goto(f"{stack.url}/")
    assert first is not None and first.status == 401
    await page.fill("input[name=token]", TOKEN)
    await page.click("form.login button")
    await page.wait_for_url(f"{stack.url}/")
    return page


async def shoot(page: Any, name: str, *, full_page: bool = True) -> None:
    folder = os.environ.get("JOBTRAIL_SCREENSHOTS")
    if folder:
        await page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=full_page)


async def test_pages_load_filter_and_open_an_operation(browser: Any, stack: Stack) -> None:
    """Signed in, the operator sees what needs attention, filters the list by key and by
    actor, and opens an operation by its full id."""
    await until_state(stack, "late-job", State.RESULT_TIMED_OUT)
    await until_state(stack, "feb-report", State.SUCCEEDED)
    await until_state(stack, "conflict-job", State.NEEDS_HUMAN)
    page = await signed_in(browser, stack)
    attention = await page.text_content("#attention")
    assert attention is not None and stack.ids["late-job"] in attention
    assert stack.ids["conflict-job"] in attention
    await shoot(page, "attention")
    await page.click(f"text={stack.ids['conflict-job']}")
    assert await page.is_visible("form.action select[name=decision]")
    await shoot(page, "resolve-form", full_page=False)
    await page.click("header nav >> text=Operations")
    await page.wait_for_url(f"{stack.url}/operations")
    await shoot(page, "operations")
    await page.fill("form.filters input[name=actor]", "agent:nightly")
    await page.click("form.filters button")
    await page.wait_for_url(lambda url: "actor=agent" in url)
    assert "6 of 6" in (await page.text_content("#listing") or "")
    await page.fill("form.filters input[name=actor]", "")
    await page.fill("form.filters input[name=key]", "feb-report")
    await page.click("form.filters button")
    await page.wait_for_url(lambda url: "key=feb-report" in url)
    assert "1 of 1" in (await page.text_content("#listing") or "")
    await page.click(f"text={stack.ids['feb-report']}")
    await page.wait_for_url(f"**/operations/{stack.ids['feb-report']}")
    assert await page.text_content("h1") == stack.ids["feb-report"]
    assert "valid" in (await page.text_content("#story") or "")
    await shoot(page, "operation", full_page=False)


async def test_a_cancel_with_a_token_is_recorded_in_the_audit_log(
    browser: Any, stack: Stack
) -> None:
    """The operator cancels a running job with a reason; the page says it took effect and
    its audit table shows the intent under her name."""
    await until_state(stack, "long-job", State.OBSERVING, State.ACCEPTED)
    page = await signed_in(browser, stack)
    await page.goto(f"{stack.url}/operations/{stack.ids['long-job']}")
    await page.fill("form.action input[name=reason]", "wrong account")
    await shoot(page, "cancel-form", full_page=False)
    await page.click("form.action button")
    notice = await page.text_content(".notice")
    assert notice is not None and "cancel took effect" in notice
    audit = await page.text_content("table.audit")
    assert audit is not None and "cancel.intent" in audit and "dashboard:alice" in audit
    assert "wrong account" in audit
    await shoot(page, "cancelled", full_page=False)
    assert await _state_of(stack, "long-job") in {
        State.CANCEL_REQUESTED,
        State.CANCELLING,
        State.CANCELLED,
    }


async def test_without_a_token_every_page_and_the_cancel_are_refused(
    browser: Any, stack: Stack
) -> None:
    """A browser without a token gets 401 on the pages, and its cancel is refused without
    reaching the ledger."""
    context = await browser.new_context()
    page = await context.new_page()
    op_id = stack.ids["hostile-job"]
    for path in ("/", "/operations", f"/operations/{op_id}"):
        answer = await page.goto(f"{stack.url}{path}")
        assert answer is not None and answer.status == 401
        assert await page.is_visible("form.login")
    await shoot(page, "sign-in")
    posted = await context.request.post(
        f"{stack.url}/operations/{op_id}/cancel", form={"reason": "sneaky", "csrf": "0" * 64}
    )
    assert posted.status == 401
    store = await open_store(stack.db, create=False)
    try:
        op = await store.get(op_id)
        assert op is not None and op.cancel_intent is None
    finally:
        await store.close()


async def test_the_page_follows_the_job_without_a_reload(browser: Any, stack: Stack) -> None:
    """While the page is open, a change made elsewhere (a cancel through the ledger) shows up
    in it by itself; the provider's hostile text stays inert."""
    page = await signed_in(browser, stack)
    op_id = stack.ids["hostile-job"]
    await page.goto(f"{stack.url}/operations/{op_id}")
    marker = await page.evaluate("() => (window.__kept = 'same page')")
    store = await open_store(stack.db, create=False)
    try:
        await Ledger(store).cancel(op_id, actor="cli:bob", reason="from the terminal")
    finally:
        await store.close()
    await page.wait_for_function(
        "() => document.querySelector('#facts').textContent.includes('from the terminal')",
        timeout=15_000,
    )
    assert await page.evaluate("() => window.__kept") == marker  # no reload happened
    await shoot(page, "hostile-text", full_page=False)
    assert await page.evaluate("() => document.querySelectorAll('#story script').length") == 0
