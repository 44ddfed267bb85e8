"""The dashboard as an operator uses it (issue 21), over real loopback HTTP on a real SQLite
ledger with the simulator: an action answers by post/redirect/get with its outcome, a form
sent twice acts once, a result that failed validation can be marked failed, accepted or
collected again, an adopt names the other job, the pages say progress, failures,
deadlines, results and pages past the end as a person reads them, a result downloads
under its type's extension, a favicon, and bulk actions (the real browser drives them in
tests/browser/test_dashboard_person_browser.py)."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientResponse, web
from aiohttp.test_utils import TestClient, TestServer

from jobtrail.core.bulk import BULK_CAP
from jobtrail.core.states import State
from jobtrail.dashboard.access import Access, operators_from_env
from jobtrail.dashboard.web import Dashboard

from harness import Harness, harness

ALICE = "alice-token-" + "a" * 20
CAROL = "carol-token-" + "c" * 20
CONFLICT = {"drop_create_answer": True, "different_id_on_retry": True}
# alice may resolve (mark failed, adopt...) only what she submitted herself
POLICY = '[actors."dashboard:alice"]\nresolve = "own"\n'
BULK_FORM = r'name="csrf" value="(\w+)"><input type="hidden" name="bulk" value="(\w+)"'


@dataclass
class Rig:
    h: Harness
    client: TestClient[Any, Any]

    def auth(self, token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}

    async def page(self, url: str, token: str = ALICE) -> str:
        answer = await self.client.get(url, headers=self.auth(token), allow_redirects=False)
        assert answer.status == 200, (url, answer.status)
        return await answer.text()

    async def post(self, url: str, form: Any, token: str = ALICE) -> ClientResponse:
        return await self.client.post(
            url, data=form, headers=self.auth(token), allow_redirects=False
        )

    async def form_of(self, op_id: str, action: str) -> dict[str, str]:
        """The hidden fields (CSRF token, request id) of one of the operation's forms."""
        page = await self.page(f"/operations/{op_id}")
        found = re.search(
            rf'action="/operations/{op_id}/{action}"><input type="hidden" name="csrf" '
            r'value="(\w+)"><input type="hidden" name="request" value="(\w+)">',
            page,
        )
        assert found, f"no {action} form on the page"
        return {"csrf": found.group(1), "request": found.group(2)}

    async def act(self, url: str, form: dict[str, Any]) -> str:
        posted = await self.post(url, form)
        assert posted.status == 303, await posted.text()
        return await self.page(posted.headers["Location"])

    async def audit(self, op_id: str | None) -> list[dict[str, Any]]:
        rows = await self.h.rt.ledger.store.audit_rows(op_id)
        return [json.loads(row.entry) for row in rows]


@pytest.fixture
async def rig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Rig]:
    monkeypatch.setenv("JOBTRAIL_OPERATOR_TOKENS", f"alice:{ALICE}")
    monkeypatch.setenv("JOBTRAIL_VIEWER_TOKENS", f"carol:{CAROL}")
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY, encoding="utf-8")
    monkeypatch.setenv("JOBTRAIL_POLICY", str(policy))
    async with harness(tmp_path, monkeypatch=monkeypatch) as h:
        app = web.Application()
        access = Access(operators_from_env())
        Dashboard(h.rt.ledger, h.rt.results, h.rt.providers, access).add_routes(app)
        async with TestClient(TestServer(app, host="127.0.0.1")) as client:
            yield Rig(h=h, client=client)


def _kinds(entries: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in entries if e["kind"] == kind]


async def test_an_action_redirects_and_a_form_sent_twice_acts_once(rig: Rig) -> None:
    """The cancel answers 303 to the operation's page, which says it took effect; the same
    form sent again (F5 on an old answer, a double click) is answered without a second
    intent; a notice forged, or sealed for another session, is not shown."""
    op = await rig.h.submit({"account": "a", "_sim": {"duration_polls": 10_000}})
    url = f"/operations/{op.operation_id}/cancel"
    form = await rig.form_of(op.operation_id, "cancel") | {"reason": "wrong account"}
    posted = await rig.post(url, form)
    assert posted.status == 303
    where = posted.headers["Location"]
    assert where.startswith(f"/operations/{op.operation_id}?notice=")
    first = await rig.page(where)
    assert "cancel took effect" in first
    again = await rig.act(url, form)
    assert "cancel took effect" in again and "nothing was done twice" in again
    assert len(_kinds(await rig.audit(op.operation_id), "cancel.intent")) == 1
    reread = await rig.page(where)  # a reload reads the page again: nothing is sent
    assert len(_kinds(await rig.audit(op.operation_id), "cancel.intent")) == 1
    assert "cancel took effect" in reread
    forged = await rig.page(f"/operations/{op.operation_id}?notice=eyJtIjoiaGkifQ.00")
    assert 'class="notice' not in forged
    as_carol = await rig.page(where, CAROL)  # sealed for alice's session, not carol's
    assert "cancel took effect" not in as_carol


async def test_a_result_that_failed_validation_is_not_a_dead_end(rig: Rig) -> None:
    """The page offers mark failed, accept as is and collect again; each is recorded as a
    human decision under the operator's name, and moves the operation on."""
    bad = {"bad_checksum": True}
    ops = [
        await rig.h.submit({"account": f"v{n}", "_sim": bad}, actor="dashboard:alice")
        for n in range(3)
    ]
    for op in ops:
        await rig.h.until(op, State.RESULT_VALIDATION_FAILED, rounds=100)
    page = await rig.page(f"/operations/{ops[0].operation_id}")
    for value in ("mark-failed", "accept-as-is", "collect-again"):
        assert f'<option value="{value}">' in page
    assert "a person must act" in page and 'action="/operations/' in page
    ends = {}
    for op, decision in zip(ops, ("accept-as-is", "collect-again", "mark-failed"), strict=True):
        form = await rig.form_of(op.operation_id, "resolve")
        said = await rig.act(
            f"/operations/{op.operation_id}/resolve",
            form | {"decision": decision, "reason": "checked by hand"},
        )
        assert "resolve took effect" in said, said
        ends[decision] = await rig.h.op(op)
        decided = _kinds(await rig.audit(op.operation_id), "human.decision")
        assert [(e["actor"], e["data"]["decision"]) for e in decided] == [
            ("dashboard:alice", decision.replace("-", "_"))
        ]
    accepted = ends["accept-as-is"]
    assert accepted.state is State.SUCCEEDED and accepted.result is not None
    assert accepted.result.valid and any("accepted_as_is" in c for c in accepted.result.checks)
    assert accepted.result.problems  # what validation found stays
    assert ends["collect-again"].state is State.RESULT_COLLECTING
    assert ends["mark-failed"].state is State.FAILED
    await rig.h.until(ops[1], State.RESULT_VALIDATION_FAILED, rounds=100)  # fetched again


async def test_after_an_adopt_the_page_names_the_other_job(rig: Rig) -> None:
    """The resolve form lists the job ids the provider tied to the operation; after adopting
    one, the page says the other may still run and how to stop it."""
    op = await rig.h.submit({"account": "c", "_sim": CONFLICT}, actor="dashboard:alice")
    await rig.h.until(op, State.NEEDS_HUMAN, rounds=100)
    op = await rig.h.op(op)
    first, second = op.conflicting_job_ids
    page = await rig.page(f"/operations/{op.operation_id}")
    assert f'<option value="{first}">' in page and f'<option value="{second}">' in page
    form = await rig.form_of(op.operation_id, "resolve")
    said = await rig.act(
        f"/operations/{op.operation_id}/resolve",
        form | {"decision": "adopt", "job_id": first, "reason": "support says the first"},
    )
    assert "resolve took effect" in said
    assert f"{second} may still be running at simulator" in said
    assert "cancel it with the provider" in said


async def test_the_pages_read_as_a_person_expects(rig: Rig) -> None:
    """Progress as 3/3; a finished operation shows no create deadline and no stale error;
    a failed one the provider's code and message, never a dict, and not "No result yet";
    a batch names its failed items; past the last page says so; a result downloads as
    .csv; the favicon is served."""
    happy = await rig.h.submit({"account": "h", "_sim": {"items": 3}})
    failed = await rig.h.submit({"account": "f", "_sim": {"outcome": "failed"}})
    batch = await rig.h.submit({"account": "b", "_sim": {"items": 4, "failed_items": 2}})
    for op in (happy, failed, batch):
        await rig.h.until(op, State.SUCCEEDED, State.FAILED, rounds=100)
    page = await rig.page(f"/operations/{happy.operation_id}")
    facts = page.split('<div id="facts"', 1)[1].split("</div>", 1)[0]
    assert "<dt>progress</dt><dd>3/3</dd>" in facts
    assert "create deadline" not in facts and "provider&#x27;s reason" not in facts
    assert "No result" not in page
    broke = await rig.page(f"/operations/{failed.operation_id}")
    reason = re.search(r'<span id="failure">(.*?)</span>', broke)
    assert reason is not None and ": " in reason.group(1) and "{" not in reason.group(1)
    assert "No result yet" not in broke and "No result: the operation ended failed" in broke
    items = await rig.page(f"/operations/{batch.operation_id}")
    assert re.search(r'class="failed-items">failed items: [\w-]+, [\w-]+<', items), items
    beyond = await rig.page("/operations?page=9")
    assert "Page 9 is past the end: 3 match, on 1 page(s)." in beyond
    download = await rig.client.get(
        f"/operations/{happy.operation_id}/result", headers=rig.auth(ALICE)
    )
    assert download.status == 200
    assert download.headers["Content-Disposition"].endswith(f'{happy.operation_id}.csv"')
    icon = await rig.client.get("/favicon.ico")
    assert icon.status == 200 and icon.content_type == "image/svg+xml"
    assert '<link rel="icon" href="/assets/favicon.svg"' in page


async def test_a_bulk_action_tries_each_item_and_records_the_whole_once(rig: Rig) -> None:
    """Mark failed everything that matches a filter: alice's own needs_human operations are
    done, another's are refused by the action policy, a running one is skipped; one audit
    entry for the whole and one per operation; the form sent again acts no more."""
    mine = [
        await rig.h.submit({"account": f"m{n}", "_sim": CONFLICT}, actor="dashboard:alice")
        for n in range(2)
    ]
    theirs = await rig.h.submit({"account": "t", "_sim": CONFLICT}, actor="cli:ops")
    for op in (*mine, theirs):
        await rig.h.until(op, State.NEEDS_HUMAN, rounds=100)
    running = await rig.h.submit(
        {"account": "r", "_sim": {"duration_polls": 10_000}}, actor="dashboard:alice"
    )
    listing = await rig.page("/operations")
    bulk = re.search(BULK_FORM, listing)
    assert bulk is not None and f"at most {BULK_CAP} operations per action" in listing
    ticked = [op.operation_id for op in (*mine, theirs, running)]
    form: dict[str, Any] = {
        "csrf": bulk.group(1),
        "bulk": bulk.group(2),
        "which": "selected",
        "action": "mark-failed",
        "reason": "the provider lost these",
    }
    data = [(k, v) for k, v in form.items()] + [("id", i) for i in ticked]
    posted = await rig.post("/bulk", data)
    assert posted.status == 303 and posted.headers["Location"] == f"/bulk/{bulk.group(2)}"
    result = await rig.page(posted.headers["Location"])
    row = r'href="/operations/(op_\w+)">[^<]*</a></td><td><span class="outcome o-(\w+)"'
    outcomes = dict(re.findall(row, result))
    assert outcomes == {
        mine[0].operation_id: "done",
        mine[1].operation_id: "done",
        theirs.operation_id: "refused",
        running.operation_id: "skipped",
    }
    assert "may not resolve" in result and "does not apply in state" in result
    assert "Settled: every item has its final word." in result
    again = await rig.post("/bulk", data)
    assert again.status == 303
    whole = _kinds(await rig.audit(None), "bulk.action")
    assert len(whole) == 1 and whole[0]["data"]["counts"] == {
        "done": 2,
        "refused": 1,
        "skipped": 1,
    }
    for op in (*mine, theirs, running):
        entries = await rig.audit(op.operation_id)
        kinds = {"human.decision", "policy.refused", "bulk.skipped"}
        assert len([e for e in entries if e["kind"] in kinds]) == 1, op.operation_id
    assert (await rig.h.op(mine[0])).state is State.FAILED
    assert (await rig.h.op(theirs)).state is State.NEEDS_HUMAN


async def test_a_bulk_action_over_the_cap_is_refused_before_any_item(rig: Rig) -> None:
    """All that match, when more match than one action takes: refused with what to do, and
    the list says so; nothing is recorded."""
    for n in range(BULK_CAP + 1):
        await rig.h.submit({"n": n}, key=f"many-{n}", actor="agent:many")
    listing = await rig.page("/operations?actor=agent:many")
    bulk = re.search(BULK_FORM, listing)
    assert bulk is not None
    form = {
        "csrf": bulk.group(1),
        "bulk": bulk.group(2),
        "which": "matching",
        "actor": "agent:many",
        "action": "cancel",
        "reason": "too many",
    }
    posted = await rig.post("/bulk", form)
    assert posted.status == 303 and posted.headers["Location"].startswith("/operations?actor=")
    said = await rig.page(posted.headers["Location"])
    assert f"{BULK_CAP + 1} operations match; one bulk action takes at most {BULK_CAP}" in said
    assert await rig.h.rt.ledger.bulk(bulk.group(2)) is None
    assert not _kinds(await rig.audit(None), "cancel.intent")
