"""The census in a real browser: headless Chromium against `jobtrail serve`, run as a user
runs it, with the simulator over loopback. The operator takes a census, sees the duplicate
said loudly and the job ended here, cancels the duplicate by ticking it, and cancels the
ended-here job from its operation's own page; each cancel is recorded under her name."""

from __future__ import annotations

import asyncio
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
from census_rig import plant_at
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
LONG = {"duration_polls": 100_000}


@dataclass
class Stack:
    url: str
    db: str
    sim: str
    ids: dict[str, str]


async def _seed(db: str, provider: Path) -> dict[str, str]:
    ledger = Ledger(await open_store(db))
    spec = load_provider_file(provider)
    try:
        late = await ledger.submit(
            spec,
            {"account": "late", "_sim": LONG},
            key="late-job",
            actor="cli:ops",
            result_deadline=timedelta(seconds=1),
        )
        done = await ledger.submit(spec, {"account": "done"}, key="done-job", actor="cli:ops")
        return {"late-job": late.operation_id, "done-job": done.operation_id}
    finally:
        await ledger.close()


async def _op(stack: Stack, key: str) -> Any:
    store = await open_store(stack.db, create=False)
    try:
        return await store.get(stack.ids[key])
    finally:
        await store.close()


async def until_state(stack: Stack, key: str, *states: State) -> None:
    async def reached() -> bool:
        return bool((await _op(stack, key)).state in states)

    await until_true_async(reached, 30, f"{key} in {states}")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    require_browser()
    tmp = tmp_path_factory.mktemp("census")
    with SimulatorThread(token=SECRET) as sim:
        ws = make_workspace(tmp, sim.base_url)
        ids = asyncio.run(_seed(str(ws.db), tmp / "providers" / "simulator.toml"))
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
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
            yield Stack(url=url, db=str(ws.db), sim=sim.base_url, ids=ids)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


@pytest.fixture
async def page() -> AsyncIterator[Any]:
    require_browser()
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        chromium = await pw.chromium.launch(executable_path=chromium_path(), args=ARGS)
        try:
            context = await chromium.new_context(viewport={"width": 1280, "height": 860})
            tab = await context.new_page()
            tab.set_default_timeout(15_000)
            yield tab
        finally:
            await chromium.close()


async def sign_in(page: Any, stack: Stack) -> None:
    await page.goto(f"{stack.url}/census")
    await page.fill("input[name=token]", TOKEN)
    await page.click("form.login button")
    await page.wait_for_url(f"{stack.url}/census")


async def test_a_duplicate_is_ticked_and_cancelled_from_the_census_page(
    page: Any, stack: Stack
) -> None:
    """The census names the duplicate loudly and the job ended here; the ticked duplicate
    is cancelled (adopted, the intent recorded under the operator's name)."""
    await until_state(stack, "late-job", State.RESULT_TIMED_OUT)
    await until_state(stack, "done-job", State.SUCCEEDED)
    duplicate = plant_at(stack.sim, stack.ids["done-job"])
    await sign_in(page, stack)
    await page.fill("form.census input[name=provider]", "simulator")
    await page.click("form.census button")
    await page.wait_for_selector("#census-jobs")
    assert "A SECOND JOB: 1" in (await page.text_content("[role=alert]") or "")
    late = await _op(stack, "late-job")
    rows = await page.text_content("#census-jobs") or ""
    assert duplicate in rows and late.remote_job_id in rows
    await page.check(f"input[name=job][value='{duplicate}']")
    await page.select_option("form.census-act select[name=action]", "cancel")
    await page.fill("form.census-act input[name=reason]", "a duplicate")
    await page.click("form.census-act button")
    await page.wait_for_url(lambda url: "/census?" in url)
    notice = await page.text_content(".notice") or ""
    assert f"cancel {duplicate}: op_" in notice and "cancel_requested" in notice, notice


async def test_an_ended_here_job_is_cancelled_from_its_operation_page(
    page: Any, stack: Stack
) -> None:
    """The operation whose result deadline passed offers the census's actions on its job;
    the cancel is recorded on that operation, under the operator's name."""
    await until_state(stack, "late-job", State.RESULT_TIMED_OUT)
    await sign_in(page, stack)
    await page.goto(f"{stack.url}/operations/{stack.ids['late-job']}")
    form = "form.census-act"
    assert "still runs at the provider" in (await page.text_content(form) or "")
    await page.select_option(f"{form} select[name=action]", "cancel")
    await page.fill(f"{form} input[name=reason]", "nobody waits for it")
    await page.click(f"{form} button")
    await page.wait_for_url(f"**/operations/{stack.ids['late-job']}?notice=*")
    notice = await page.text_content(".notice") or ""
    assert "cancel_requested" in notice, notice
    op = await _op(stack, "late-job")
    assert op.cancel_intent is not None and op.cancel_intent.actor == "dashboard:alice"
