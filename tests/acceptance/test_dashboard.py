"""The dashboard over real loopback HTTP (no browser): the 401 gate, CSRF, roles, escaping
of hostile provider text, and guarded actions recorded in the audit log under the
operator's name. The ledger is a real SQLite file; the provider is the simulator."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientResponse, web
from aiohttp.test_utils import TestClient, TestServer

from jobtrail.core.states import State
from jobtrail.dashboard.access import COOKIE, Access, operators_from_env
from jobtrail.dashboard.web import Dashboard
from jobtrail.simulator.faults import HOSTILE_TEXT
from jobtrail.store.codec import dump, result_doc

from harness import Harness, harness

ALICE = "alice-token-" + "a" * 20  # operator
CAROL = "carol-token-" + "c" * 20  # read-only
HOSTILE_HTML = '<script>alert("x")</script><img src=x onerror=alert(1)>'


@dataclass
class Rig:
    h: Harness
    client: TestClient[Any, Any]

    async def get(self, url: str, token: str | None = ALICE, **kw: Any) -> ClientResponse:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return await self.client.get(url, headers=headers, allow_redirects=False, **kw)

    async def post(
        self, url: str, form: dict[str, str], token: str | None = ALICE
    ) -> ClientResponse:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return await self.client.post(url, data=form, headers=headers, allow_redirects=False)

    async def csrf(self, op_id: str, token: str = ALICE) -> str:
        text = await (await self.get(f"/operations/{op_id}", token)).text()
        found = re.search(r'name="csrf" value="([0-9a-f]+)"', text)
        assert found, "the operation page carries a CSRF token in its forms"
        return found.group(1)


@pytest.fixture
async def rig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Rig]:
    monkeypatch.setenv("JOBTRAIL_OPERATOR_TOKENS", f"alice:{ALICE}")
    monkeypatch.setenv("JOBTRAIL_VIEWER_TOKENS", f"carol:{CAROL}")
    async with harness(tmp_path, monkeypatch=monkeypatch) as h:
        app = web.Application()
        access = Access(operators_from_env())
        Dashboard(h.rt.ledger, h.rt.results, h.rt.providers, access).add_routes(app)
        async with TestClient(TestServer(app, host="127.0.0.1")) as client:
            yield Rig(h=h, client=client)


async def audit(rig: Rig, op_id: str) -> list[dict[str, Any]]:
    rows = await rig.h.rt.ledger.store.audit_rows(op_id)
    return [json.loads(row.entry) for row in rows]


async def test_every_page_and_action_answers_401_without_a_valid_token(rig: Rig) -> None:
    """No token, a wrong token or a forged cookie: 401 everywhere, and nothing changes."""
    op = await rig.h.submit({"account": "a"})
    urls = ["/", "/operations", f"/operations/{op.operation_id}"]
    urls += [
        f"/operations/{op.operation_id}/result",
        f"/operations/{op.operation_id}/escalation.json",
    ]
    for token in (None, "not-a-token-at-all-xxxxxxxx"):
        for url in urls:
            assert (await rig.get(url, token)).status == 401, url
        posted = await rig.post(f"/operations/{op.operation_id}/cancel", {"reason": "x"}, token)
        assert posted.status == 401
    forged = await rig.client.get("/", cookies={COOKIE: "eyJuIjoiYWxpY2UifQ.00"})
    assert forged.status == 401 and "Sign in" in await forged.text()
    assert (await rig.h.op(op)).cancel_intent is None
    assert (await rig.get("/assets/dashboard.css", None)).status == 200


async def test_a_login_sets_a_strict_session_cookie_that_opens_the_pages(rig: Rig) -> None:
    """The login form sets a Secure, HttpOnly, SameSite=Strict cookie that opens the pages;
    a wrong token gets 401 and no cookie."""
    wrong = await rig.client.post(
        "/login", data={"token": "nope-nope-nope-nope"}, allow_redirects=False
    )
    good = await rig.client.post(
        "/login", data={"token": ALICE, "next": "/operations"}, allow_redirects=False
    )
    assert wrong.status == 401 and COOKIE not in wrong.cookies
    assert good.status == 303 and good.headers["Location"] == "/operations"
    header = good.headers["Set-Cookie"]
    assert all(word in header for word in ("Secure", "HttpOnly", "SameSite=Strict"))
    assert ALICE not in header
    value = good.cookies[COOKIE].value
    page = await rig.client.get("/operations", cookies={COOKIE: value})
    assert page.status == 200 and "alice (operator)" in await page.text()


async def test_an_action_without_the_csrf_token_is_refused(rig: Rig) -> None:
    """A cancel posted without (or with another session's) CSRF token is refused with 403
    and records nothing."""
    op = await rig.h.submit({"account": "a"})
    url = f"/operations/{op.operation_id}/cancel"
    missing = await rig.post(url, {"reason": "no csrf"})
    other = await rig.post(url, {"reason": "wrong csrf", "csrf": "0" * 64})
    assert (missing.status, other.status) == (403, 403)
    after = await rig.h.op(op)
    assert after.cancel_intent is None and after.version == op.version
    assert not [e for e in await audit(rig, op.operation_id) if e["kind"] == "cancel.intent"]


async def test_a_cancel_is_recorded_under_the_operators_name(rig: Rig) -> None:
    """A cancel with the CSRF token goes through the ledger: the page says it took effect and
    the audit log has the intent by dashboard:alice with her reason."""
    op = await rig.h.submit({"account": "a"})
    answer = await rig.post(
        f"/operations/{op.operation_id}/cancel",
        {"reason": "wrong account", "csrf": await rig.csrf(op.operation_id)},
    )
    text = await answer.text()
    assert answer.status == 200 and "cancel took effect" in text
    intents = [e for e in await audit(rig, op.operation_id) if e["kind"] == "cancel.intent"]
    assert [(e["actor"], e["data"]["reason"]) for e in intents] == [
        ("dashboard:alice", "wrong account")
    ]
    assert "dashboard:alice" in text  # the audit table on the page shows it


async def test_read_only_operators_see_but_cannot_act(rig: Rig) -> None:
    """A read-only operator reads every page, gets no forms, and a cancel is refused."""
    op = await rig.h.submit({"account": "a"})
    page = await rig.get(f"/operations/{op.operation_id}", CAROL)
    text = await page.text()
    assert page.status == 200 and "Read-only access" in text and 'name="csrf"' not in text
    alice_csrf = await rig.csrf(op.operation_id)
    refused = await rig.post(
        f"/operations/{op.operation_id}/cancel", {"reason": "r", "csrf": alice_csrf}, CAROL
    )
    assert refused.status == 403
    assert (await rig.h.op(op)).cancel_intent is None


async def test_a_refused_action_says_so_and_changes_nothing(rig: Rig) -> None:
    """Resolving an operation that needs no decision is refused by the ledger; the page
    answers 409 and says the action was refused."""
    op = await rig.h.submit({"account": "a"})
    answer = await rig.post(
        f"/operations/{op.operation_id}/resolve",
        {"decision": "mark_failed", "reason": "r", "csrf": await rig.csrf(op.operation_id)},
    )
    assert answer.status == 409 and "resolve refused" in await answer.text()
    assert (await rig.h.op(op)).state is State.CREATE_PENDING


async def test_hostile_provider_text_is_escaped_everywhere(rig: Rig) -> None:
    """Markup and terminal escapes from a provider (state words, progress, errors) reach the
    pages as visible text: never a tag, never a raw control character."""
    hostile = await rig.h.submit(
        {"account": "h", "_sim": {"hostile_text": True, "outcome": "failed"}}
    )
    rejected = await rig.h.submit(
        {"account": "r", "_sim": {"reject_create": {"status": 400, "message": HOSTILE_HTML}}},
        key="rejected",
    )
    await rig.h.run()
    pages = [
        await (await rig.get(url)).text()
        for url in (
            "/",
            "/operations",
            f"/operations/{hostile.operation_id}",
            f"/operations/{rejected.operation_id}",
        )
    ]
    story = pages[3]
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in story
    assert "\\x1b]8;;http://evil.example/" in pages[2]  # shown, not obeyed
    for text in pages:
        assert "<script>alert" not in text and "<img src=x" not in text
        assert not any(c in text for c in HOSTILE_TEXT if not c.isprintable())


async def test_the_list_filters_counts_and_pages(rig: Rig) -> None:
    """Filters narrow the list, the count says how many match in all, paging moves on."""
    for n in range(53):
        await rig.h.submit({"n": n}, key=f"k{n}", actor="agent:many" if n % 2 else "cli:bob")
    everything = await (await rig.get("/operations")).text()
    second = await (await rig.get("/operations?page=2")).text()
    agents = await (await rig.get("/operations?actor=agent:many")).text()
    keyed = await (await rig.get("/operations?key=k7")).text()
    assert "50 of 53" in everything and 'href="/operations?page=2"' in everything
    assert "3 of 53" in second and "(showing 51–53)" in second
    assert "26 of 26" in agents and "cli:bob" not in agents
    assert "1 of 1" in keyed and ">k7<" in keyed
    future = await (await rig.get("/operations?from=2100-01-01")).text()
    past = await (await rig.get("/operations?until=2000-01-01T00:00")).text()
    since = await (await rig.get("/operations?from=2000-01-01&until=2100-01-01")).text()
    assert "0 of 0" in future and "0 of 0" in past and "50 of 53" in since
    assert (await rig.get("/operations?from=yesterday")).status == 400


async def test_an_extend_resumes_a_timed_out_operation_under_the_operators_name(rig: Rig) -> None:
    """Extending the result deadline of a result_timed_out operation goes through the
    ledger's decision: the state moves on and the audit log names the operator."""
    op = await rig.h.submit(
        {"account": "a", "_sim": {"duration_polls": 10_000}},
        result_deadline=timedelta(seconds=30),
    )
    await rig.h.until(op, State.RESULT_TIMED_OUT, rounds=200)
    answer = await rig.post(
        f"/operations/{op.operation_id}/extend",
        {
            "deadline": "result",
            "duration": "2h",
            "reason": "the report is big",
            "csrf": await rig.csrf(op.operation_id),
        },
    )
    assert answer.status == 200 and "extend took effect" in await answer.text()
    assert (await rig.h.op(op)).state is State.OBSERVING
    decisions = [e for e in await audit(rig, op.operation_id) if e["kind"] == "human.decision"]
    assert [(e["actor"], e["data"]["decision"]) for e in decisions] == [
        ("dashboard:alice", "extend")
    ]


async def test_resolve_adopts_a_job_and_shows_the_needs_human_operation_first(rig: Rig) -> None:
    """A needs_human operation leads the attention page; resolving it by adopting one of the
    conflicting jobs goes through the ledger, under the operator's name."""
    violation = {"drop_create_answer": True, "different_id_on_retry": True}
    op = await rig.h.submit({"account": "a", "_sim": violation})
    await rig.h.run()
    op = await rig.h.op(op)
    assert op.state is State.NEEDS_HUMAN
    home = await (await rig.get("/")).text()
    assert op.operation_id in home and "waiting for a decision" in home
    answer = await rig.post(
        f"/operations/{op.operation_id}/resolve",
        {
            "decision": "adopt",
            "job_id": op.conflicting_job_ids[0],
            "reason": "support confirmed the first job",
            "csrf": await rig.csrf(op.operation_id),
        },
    )
    assert answer.status == 200 and "resolve took effect" in await answer.text()
    after = await rig.h.op(op)
    assert after.remote_job_id == op.conflicting_job_ids[0] and after.state is not State.NEEDS_HUMAN
    decisions = [e for e in await audit(rig, op.operation_id) if e["kind"] == "human.decision"]
    assert [(e["actor"], e["data"]["decision"]) for e in decisions] == [
        ("dashboard:alice", "adopt")
    ]


async def test_overdue_polls_and_expired_leases_need_attention(rig: Rig) -> None:
    """An operation due long ago that no worker took, and one whose lease expired while held,
    are both listed as needing attention, with the lease holder named."""
    store = rig.h.rt.ledger.store
    waiting = await rig.h.submit({"account": "w"}, key="waiting")
    held = await rig.h.submit({"account": "h"}, key="held")
    claims = await store.claim_due(
        "worker:gone", rig.h.clock.now(), 10, timedelta(seconds=30), only=held.operation_id
    )
    assert [c.operation.operation_id for c in claims] == [held.operation_id]
    before = await (await rig.get("/")).text()
    rig.h.clock.advance(600)
    after = await (await rig.get("/")).text()
    assert waiting.operation_id not in before and held.operation_id not in before
    assert waiting.operation_id in after and "poll overdue since 10 min ago" in after
    assert held.operation_id in after and "lease of worker:gone (fence 1) expired" in after


async def test_the_result_download_rechecks_the_hash(rig: Rig) -> None:
    """The download serves the stored result as an attachment; once the stored file no
    longer matches its hash, it is refused instead of served."""
    op = await rig.h.submit({"account": "a"})
    await rig.h.run()
    op = await rig.h.op(op)
    assert op.result is not None and op.result.location
    url = f"/operations/{op.operation_id}/result"
    good = await rig.get(url)
    content = await good.read()
    assert good.status == 200 and content.startswith(b"id,status,value")
    assert good.headers["Content-Disposition"].startswith("attachment")
    assert good.content_type == "application/octet-stream"
    stored = Path(op.result.location)
    stored.write_bytes(stored.read_bytes() + b"forged,row\n")
    forged = await rig.get(url)
    assert forged.status == 409 and b"forged" not in await forged.read()


async def test_the_result_download_refuses_a_planted_result(rig: Rig) -> None:
    """Another stored result swapped into the record, with its own digest and size (so the
    hash check alone would pass), is refused: it is not the result the audit log bound
    when it was collected (issue 19)."""
    op = await rig.h.submit({"account": "a"})
    await rig.h.run()
    op = await rig.h.op(op)
    assert op.result is not None
    planted = b"id,status,value\nplanted,succeeded,1000000\n"
    location = await rig.h.rt.results.put(planted)
    forged = replace(
        op.result, location=location, sha256=hashlib.sha256(planted).hexdigest(), size=len(planted)
    )
    with sqlite3.connect(rig.h.db) as conn:
        conn.execute(
            "UPDATE operations SET result = ? WHERE operation_id = ?",
            (dump(result_doc(forged)), op.operation_id),
        )
    refused = await rig.get(f"/operations/{op.operation_id}/result")
    body = await refused.read()
    assert refused.status == 409 and b"planted" in body and b"1000000" not in body
