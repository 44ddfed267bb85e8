"""Notices to people: an operation entering a person state writes one notice in the
transaction of its transition, and the notifier delivers it, signed as Standard Webhooks,
to a real HTTP receiver on loopback; retries honour Retry-After and keep the event id; an
endpoint that never answers delays nothing but its own notice. Virtual clock throughout."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiohttp import web
from standardwebhooks import Webhook

from census_rig import census_of, plant_report
from jobtrail.core.nextstep import next_step
from jobtrail.core.notices import census_notice
from jobtrail.core.states import State
from jobtrail.presentation.explain import escalation_bundle
from jobtrail.services.notify import Notifier, endpoint

from harness import SECRET, Harness
from waits import until_true_async

KEY = "whsec_" + "c2VjcmV0LXNpZ25pbmcta2V5LWZvci10ZXN0cw=="  # base64 of a test key
S = State


@dataclass
class Receiver:
    """A loopback HTTP endpoint answering with the statuses queued in `answers` (200 once
    they run out); `hang` makes it never answer until released."""

    answers: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    got: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    hang: asyncio.Event | None = None
    url: str = ""

    async def handle(self, request: web.Request) -> web.Response:
        self.got.append((dict(request.headers), await request.read()))
        if self.hang is not None:
            await self.hang.wait()
        status, headers = self.answers.pop(0) if self.answers else (200, {})
        return web.Response(status=status, headers=headers, text="ok")


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    rec = Receiver()
    app = web.Application()
    app.router.add_post("/hook/{rest:.*}", rec.handle)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    rec.url = f"http://{host}:{port}/hook/T0-secret-path"
    yield rec
    if rec.hang is not None:
        rec.hang.set()
    await runner.cleanup()


def verified(headers: dict[str, str], body: bytes) -> dict[str, Any]:
    """The body, once its Standard Webhooks signature is checked (at its own timestamp:
    the notifier signs on the virtual clock)."""
    stamp = datetime.fromtimestamp(int(headers["webhook-timestamp"]), UTC)
    expected = Webhook(KEY).sign(headers["webhook-id"], stamp, body)
    assert headers["webhook-signature"] == expected
    document: dict[str, Any] = json.loads(body)
    return document


async def unconfirmed(rig: Harness) -> str:
    """An operation driven into cancellation_unconfirmed (an ignored cancel); its id."""
    op = await rig.submit(
        {"account": "a", "_sim": {"cancel": "ignore", "never_finish": True}},
        cancel_deadline=timedelta(minutes=5),
    )
    await rig.until(op, S.OBSERVING)
    await rig.rt.ledger.cancel(op.operation_id, actor="alice", reason="too expensive")
    await rig.run()
    assert (await rig.op(op)).state is S.CANCELLATION_UNCONFIRMED
    return op.operation_id


def notifier(rig: Harness, rec: Receiver, **options: Any) -> Notifier:
    return Notifier(
        rig.rt.ledger,
        [endpoint(rec.url)],
        sign=Webhook(KEY),
        dashboard="https://ops.example/jobtrail",
        **options,
    )


async def test_an_escalation_is_recorded_with_its_transition(rig: Harness) -> None:
    """Entering cancellation_unconfirmed writes exactly one notice, with the words
    `explain` uses, and neither the request body, the token nor the secret."""
    op_id = await unconfirmed(rig)
    op = await rig.op(op_id)
    (box,) = await rig.rt.ledger.notices(op_id)
    data = box.notice.data
    assert box.notice.type == "operation.cancellation_unconfirmed" and box.due_at is not None
    assert data["operation_id"] == op_id and data["key"] == op.key
    assert data["remote_job_id"] == op.remote_job_id and data["trace_id"] == op.trace_id
    assert data["provider"] == op.provider and data["state"] == "cancellation_unconfirmed"
    history = await rig.history(op)
    entered = next(t for t in history if t.to_state is S.CANCELLATION_UNCONFIRMED)
    assert box.notice.at == entered.at
    assert data["next_step"] == next_step(op, rig.clock.now())
    bundle = escalation_bundle(
        op, history, await rig.rt.ledger.store.attempts(op_id), op.created_at
    )
    assert data["summary"] == bundle["summary"]
    text = json.dumps(box.notice.document())
    assert op.idempotency_token not in text and SECRET not in text and '"account"' not in text
    assert await rig.rt.ledger.notice_backlog() == 1


async def test_a_failing_endpoint_is_retried_after_its_retry_after_with_one_event_id(
    rig: Harness, receiver: Receiver
) -> None:
    """Two refusals (503 with Retry-After: 120, then 500) then a 200: three signed posts of
    one event id, each attempt recorded, the first retry waiting the 120 s asked, and the
    notice delivered once."""
    op_id = await unconfirmed(rig)
    receiver.answers = [(503, {"Retry-After": "120"}), (500, {})]
    async with notifier(rig, receiver) as n:
        assert await n.deliver_due() == 1
        (box,) = await rig.rt.ledger.notices(op_id)
        assert box.tries == 1 and box.due_at == rig.clock.now() + timedelta(seconds=120)
        assert await n.deliver_due() == 0  # not due before its Retry-After
        rig.clock.advance(120)
        assert await n.deliver_due() == 1
        (box,) = await rig.rt.ledger.notices(op_id)
        assert box.tries == 2 and box.due_at is not None
        rig.clock.advance((box.due_at - rig.clock.now()).total_seconds())
        assert await n.deliver_due() == 1
        assert await n.deliver_due() == 0
    (box,) = await rig.rt.ledger.notices(op_id)
    assert box.delivered_at is not None and box.due_at is None
    assert await rig.rt.ledger.notice_backlog() == 0
    attempts = await rig.rt.ledger.delivery_attempts(box.notice.event_id)
    assert [(a.outcome, a.http_status) for a in attempts] == [
        ("refused", 503),
        ("refused", 500),
        ("delivered", 200),
    ]
    assert all("secret-path" not in a.endpoint for a in attempts)
    ids = {headers["webhook-id"] for headers, _ in receiver.got}
    assert ids == {box.notice.event_id} and len(receiver.got) == 3
    document = verified(*receiver.got[-1])
    assert document["type"] == "operation.cancellation_unconfirmed"
    assert document["data"]["dashboard_url"] == (f"https://ops.example/jobtrail/operations/{op_id}")


async def test_an_endpoint_that_never_answers_blocks_no_operation(
    rig: Harness, receiver: Receiver
) -> None:
    """While a delivery hangs on an endpoint that does not answer, another operation runs
    to success; the hung post is recorded as unanswered once its timeout passes, and the
    notice stays due for another round."""
    op_id = await unconfirmed(rig)
    receiver.hang = asyncio.Event()
    async with notifier(rig, receiver, timeout=timedelta(seconds=1)) as n:
        delivering = asyncio.create_task(n.deliver_due())
        await until_true_async(lambda: len(receiver.got) == 1, 10, "the post reached it")
        other = await rig.submit({"account": "b"})
        await rig.run()
        assert (await rig.op(other)).state is S.SUCCEEDED
        assert await delivering == 1  # the timeout ends the hung post
    (box,) = await rig.rt.ledger.notices(op_id)
    assert box.delivered_at is None and box.due_at is not None and box.tries == 1
    (attempt,) = await rig.rt.ledger.delivery_attempts(box.notice.event_id)
    assert attempt.outcome == "unanswered" and attempt.http_status is None


async def test_a_census_finding_is_delivered_through_the_same_outbox(
    rig: Harness, receiver: Receiver
) -> None:
    """The census' hook: `raise_notice(census_notice(...))` queues one event (raising it
    again changes nothing), delivered like an escalation."""
    notice = census_notice(
        provider="simulator", remote_job_id="job_9", finding="unknown_here",
        at=rig.clock.now(), summary="job_9 carries our marker but is not in this ledger",
    )  # fmt: skip
    await rig.rt.ledger.raise_notice(notice)
    await rig.rt.ledger.raise_notice(notice)
    async with notifier(rig, receiver) as n:
        assert await n.deliver_due() == 1
    document = verified(*receiver.got[0])
    assert document["type"] == "census.finding" and document["data"]["remote_job_id"] == "job_9"


async def test_the_slack_form_posts_text(rig: Harness, receiver: Receiver) -> None:
    """A slack+ endpoint gets `{"text": ...}` naming the operation, its summary and link."""
    op_id = await unconfirmed(rig)
    n = Notifier(rig.rt.ledger, [endpoint("slack+" + receiver.url)], dashboard="https://d")
    async with n:
        await n.deliver_due()
    body = json.loads(receiver.got[0][1])
    assert set(body) == {"text"} and op_id in body["text"]
    assert (
        "may still be running" in body["text"] and f"https://d/operations/{op_id}" in body["text"]
    )


async def test_a_census_finding_a_second_job_tells_a_person_once(
    rig: Harness, receiver: Receiver
) -> None:
    """A census that finds a second job carrying an operation's marker raises one notice
    (census.finding, second_job), delivered; a census taken again raises none more."""
    followed = await rig.until(await rig.submit({"n": 1}), S.OBSERVING)
    second = await plant_report(rig, followed.operation_id)
    await census_of(rig)
    await census_of(rig)
    boxes = [b for b in await rig.rt.ledger.notices() if b.notice.type == "census.finding"]
    assert len(boxes) == 1
    data = boxes[0].notice.data
    assert data["finding"] == "second_job" and data["remote_job_id"] == second
    assert data["operation_id"] == followed.operation_id
    async with notifier(rig, receiver) as n:
        assert await n.deliver_due() == 1
    assert verified(*receiver.got[0])["data"]["remote_job_id"] == second
