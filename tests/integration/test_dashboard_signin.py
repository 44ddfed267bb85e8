"""Signing in and out of the dashboard over real loopback HTTP: the page a sign-in goes on
to is always one of ours, and a sign-out ends the session on the server (a copy of the old
cookie opens nothing). The ledger is a real SQLite file; the provider is the simulator."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from jobtrail.dashboard.access import COOKIE, Access, operators_from_env
from jobtrail.dashboard.web import Dashboard

from harness import harness

ALICE = "alice-token-" + "a" * 20


@pytest.fixture
async def client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[TestClient[Any, Any]]:
    monkeypatch.setenv("JOBTRAIL_OPERATOR_TOKENS", f"alice:{ALICE}")
    async with harness(tmp_path, monkeypatch=monkeypatch) as h:
        app = web.Application()
        access = Access(operators_from_env())
        Dashboard(h.rt.ledger, h.rt.results, h.rt.providers, access).add_routes(app)
        async with TestClient(TestServer(app, host="127.0.0.1")) as c:
            yield c


@pytest.mark.parametrize(
    "target",
    [
        "/\t/evil.example",
        "/\n/evil.example",
        "/\r\n/evil.example",
        "//evil.example",
        "/\\evil.example",
        "/\\/evil.example",
        "https://evil.example/",
        "http:/evil.example",
        "evil.example",
        "javascript:alert(1)",
        " /\t/evil.example",
    ],
)
async def test_a_sign_in_never_goes_on_to_another_site(
    client: TestClient[Any, Any], target: str
) -> None:
    answer = await client.post(
        "/login", data={"token": ALICE, "next": target}, allow_redirects=False
    )
    assert answer.status == 303
    assert answer.headers["Location"] == "/"


async def test_a_sign_in_goes_on_to_the_page_of_ours_it_came_from(
    client: TestClient[Any, Any],
) -> None:
    answer = await client.post(
        "/login",
        data={"token": ALICE, "next": "/operations?state=needs_human&page=2"},
        allow_redirects=False,
    )
    assert answer.headers["Location"] == "/operations?state=needs_human&page=2"


async def test_a_sign_out_ends_the_session_on_the_server(client: TestClient[Any, Any]) -> None:
    signed_in = await client.post("/login", data={"token": ALICE}, allow_redirects=False)
    cookie = signed_in.cookies[COOKIE].value
    client.session.cookie_jar.clear()
    page = await client.get("/operations", cookies={COOKIE: cookie}, allow_redirects=False)
    assert page.status == 200, "the session opens the pages while signed in"

    out = await client.post("/logout", cookies={COOKIE: cookie}, allow_redirects=False)
    assert out.status == 303
    client.session.cookie_jar.clear()
    again = await client.get("/operations", cookies={COOKIE: cookie}, allow_redirects=False)
    assert again.status == 401, "a copy of the old cookie no longer opens a page"

    # a new sign-in of the same operator is a new session, and works
    fresh = await client.post("/login", data={"token": ALICE}, allow_redirects=False)
    client.session.cookie_jar.clear()
    value = fresh.cookies[COOKIE].value
    assert (await client.get("/", cookies={COOKIE: value}, allow_redirects=False)).status == 200
