"""The generic HTTP provider against the simulator over loopback: every outcome type and
every fault comes back as the right typed outcome, never as an exception."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import aiohttp
import pytest

from jobtrail.core import outcomes as o
from jobtrail.core.model import AttemptKind, Operation
from jobtrail.core.states import RemoteStatus
from jobtrail.providers.file.config import parse_provider
from jobtrail.providers.http.provider import HttpProvider
from jobtrail.providers.protocol import Reply
from jobtrail.simulator import Simulator

from factories import make_op
from harness import SECRET, simulator_doc
from waits import until_true_async

K = AttemptKind


class Rig:
    def __init__(self, sim: Simulator, provider: HttpProvider, doc: dict[str, Any]) -> None:
        self.sim, self.provider, self.doc = sim, provider, doc
        self.count = 0

    def op(self, body: dict[str, Any] | None = None, **changes: Any) -> Operation:
        self.count += 1
        op = make_op(
            operation_id=f"op_test{self.count:04d}",
            idempotency_token=f"idem_test{self.count:04d}",
            provider_config=self.doc,
        )
        return replace(op, request=replace(op.request, body=body or {"account": "a"}), **changes)

    async def call(self, kind: AttemptKind, op: Operation) -> Reply:
        return await self.provider.call(kind, op)

    async def created(self, body: dict[str, Any]) -> Operation:
        op = self.op(body)
        reply = await self.call(K.CREATE, op)
        assert isinstance(reply.outcome, o.Accepted), reply
        return replace(op, remote_job_id=reply.outcome.job_id)


async def make_rig(monkeypatch: pytest.MonkeyPatch, **edits: Any) -> AsyncIterator[Rig]:
    monkeypatch.setenv("REPORTS_API_TOKEN", SECRET)
    sim = Simulator(token=SECRET)
    doc = simulator_doc(await sim.start()) | {"timeout": "1s"} | edits
    async with aiohttp.ClientSession() as session:
        yield Rig(sim, HttpProvider(parse_provider(doc), session), doc)
    await sim.close()


@pytest.fixture
async def rig(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Rig]:
    async for value in make_rig(monkeypatch):
        yield value


async def test_create_is_accepted_with_job_id_state_and_status_url(rig: Rig) -> None:
    """202 + Location + body: Accepted with the provider's words mapped."""
    reply = await rig.call(K.CREATE, rig.op())
    outcome = reply.outcome
    assert isinstance(outcome, o.Accepted)
    assert outcome.job_id.startswith("job_") and outcome.remote_state == "queued"
    assert outcome.remote_status is RemoteStatus.RUNNING
    assert outcome.status_url == f"/v1/jobs/{outcome.job_id}"
    assert outcome.request_id and reply.detail["status"] == 202


@pytest.mark.parametrize(
    ("status", "where"), [(201, "Location"), (200, "Operation-Location"), (202, "body")]
)
async def test_status_url_from_header_or_body(rig: Rig, status: int, where: str) -> None:
    """201/200/202 answers; the status URL from Location, Operation-Location or the body."""
    faults = {"create_status": status, "status_location": where}
    outcome = (await rig.call(K.CREATE, rig.op({"_sim": faults}))).outcome
    assert isinstance(outcome, o.Accepted) and outcome.http_status == status
    assert outcome.status_url is not None and outcome.job_id in outcome.status_url


async def test_the_token_and_reference_and_trace_go_on_the_wire(rig: Rig) -> None:
    """Create carries the idempotency token, the operation id as client reference, the trace."""
    op = rig.op()
    await rig.call(K.CREATE, op)
    (call,) = rig.sim.calls
    assert call.idempotency_key == op.idempotency_token
    assert call.client_reference == op.operation_id
    assert call.trace_id == op.trace_id and op.trace_id in (call.traceparent or "")
    assert call.auth_valid


async def test_synchronous_result(rig: Rig) -> None:
    """A 200 with the result inline is a SyncResult, not an acceptance."""
    doc = rig.doc | {"create": rig.doc["create"] | {"result": "result"}}
    provider = HttpProvider(parse_provider(doc), rig.provider.session)
    reply = await provider.call(K.CREATE, rig.op({"_sim": {"sync_result": True}}))
    assert isinstance(reply.outcome, o.SyncResult) and reply.outcome.content.startswith(b"{")


@pytest.mark.parametrize(
    ("fault", "kind"),
    [
        ({"drop_create_answer": True}, o.Ambiguous),
        ({"delay_create": 3}, o.Ambiguous),
        ({"create_error_after_accept": 502}, o.Ambiguous),
        ({"malformed_create": "not_json"}, o.Ambiguous),
        ({"malformed_create": "missing_job_id"}, o.Ambiguous),
        ({"malformed_create": "wrong_types"}, o.Ambiguous),
        ({"malformed_create": "huge"}, o.Ambiguous),
        ({"throttle_create": {"status": 429, "retry_after": 3}}, o.Throttled),
        ({"throttle_create": {"status": 503, "retry_after": "date"}}, o.Throttled),
        ({"reject_create": {"status": 422, "message": "bad range"}}, o.Rejected),
    ],
)
async def test_create_faults_map_to_typed_outcomes(
    rig: Rig, fault: dict[str, Any], kind: type
) -> None:
    """Lost, late, broken, throttled and refused creates are told apart."""
    reply = await rig.call(K.CREATE, rig.op({"_sim": fault}))
    assert isinstance(reply.outcome, kind), reply.outcome
    assert reply.detail  # something is always recorded


async def test_in_flight_key_is_throttled_not_failed(rig: Rig) -> None:
    """A 409 for a key still in flight means "later", never a rejection."""
    import asyncio

    op = rig.op({"_sim": {"delay_create": 0.8}})
    first = asyncio.create_task(rig.call(K.CREATE, op))

    def arrived() -> bool:  # in flight: the simulator holds the job, answering 0.8 s later
        return any(j.client_reference == op.operation_id for j in rig.sim.jobs.values())

    await until_true_async(arrived, 10, "the first create reached the simulator")
    second = await rig.call(K.CREATE, op)
    assert isinstance(second.outcome, o.Throttled) and second.outcome.http_status == 409
    assert isinstance((await first).outcome, o.Accepted)


async def test_same_key_different_body_is_refused_by_the_server(rig: Rig) -> None:
    """The simulator, like a careful server, refuses a reused key with another body."""
    op = rig.op({"account": "a"})
    await rig.call(K.CREATE, op)
    changed = replace(op, request=replace(op.request, body={"account": "b"}))
    outcome = (await rig.call(K.CREATE, changed)).outcome
    assert isinstance(outcome, o.Rejected) and outcome.http_status == 422


async def test_status_cancel_result_and_lookup(rig: Rig) -> None:
    """Observed with progress; acknowledged cancel; fetched result; lookup by reference."""
    op = await rig.created({"_sim": {"duration_polls": 3}, "items": 5})
    seen = (await rig.call(K.STATUS, op)).outcome
    assert isinstance(seen, o.Observed) and seen.remote_status is RemoteStatus.RUNNING
    assert seen.progress is not None and seen.provider_updated_at
    found = (await rig.call(K.RECONCILE, op)).outcome
    assert isinstance(found, o.Found) and found.job_ids == (op.remote_job_id,)
    early = (await rig.call(K.RESULT, op)).outcome
    assert isinstance(early, o.Throttled)  # 409: not ready yet
    for _ in range(3):
        seen = (await rig.call(K.STATUS, op)).outcome
    assert isinstance(seen, o.Observed) and seen.remote_status is RemoteStatus.SUCCEEDED
    result = await rig.call(K.RESULT, op)
    assert result.fetched is not None and result.fetched.record_count == 5
    assert result.fetched.content_type == "text/csv" and result.fetched.checksum
    cancel = (await rig.call(K.CANCEL, op)).outcome
    assert isinstance(cancel, o.Rejected) and cancel.http_status == 409  # already finished


async def test_lookup_of_an_unknown_reference_proves_absence(rig: Rig) -> None:
    """No job under our reference: an empty Found."""
    outcome = (await rig.call(K.RECONCILE, rig.op())).outcome
    assert isinstance(outcome, o.Found) and outcome.job_ids == ()


@pytest.mark.parametrize(
    ("fault", "kind", "http"),
    [
        ({"throttle_status": {"status": 503, "retry_after": 4}}, o.Throttled, 503),
        ({"throttle_status": {"status": 429, "retry_after": "date"}}, o.Throttled, 429),
        ({"status_error": 1}, o.Ambiguous, 500),
    ],
)
async def test_status_faults(rig: Rig, fault: dict[str, Any], kind: type, http: int) -> None:
    """Throttled and failing status reads say so, with Retry-After when given."""
    op = await rig.created({"_sim": fault})
    outcome = (await rig.call(K.STATUS, op)).outcome
    assert isinstance(outcome, kind) and outcome.http_status == http
    if kind is o.Throttled:
        assert isinstance(outcome, o.Throttled) and outcome.retry_after


async def test_result_faults(rig: Rig) -> None:
    """Gone results are ResultMissing; 5xx is ambiguous; bad checksums are fetched as is."""
    for fault, kind in (
        ({"result_gone": 410}, o.ResultMissing),
        ({"result_gone": 404}, o.ResultMissing),
        ({"result_error": 1}, o.Ambiguous),
    ):
        op = await rig.created({"_sim": fault | {"duration_polls": 1}})
        await rig.call(K.STATUS, op)
        assert isinstance((await rig.call(K.RESULT, op)).outcome, kind)
    op = await rig.created({"_sim": {"bad_checksum": True, "duration_polls": 1}})
    await rig.call(K.STATUS, op)
    fetched = (await rig.call(K.RESULT, op)).fetched
    assert fetched is not None and fetched.checksum is not None


@pytest.mark.parametrize(
    ("mode", "next_state"),
    [
        ("honour", RemoteStatus.CANCELLED),
        ("race", RemoteStatus.SUCCEEDED),
        ("ignore", RemoteStatus.RUNNING),
    ],
)
async def test_cancel_modes(rig: Rig, mode: str, next_state: RemoteStatus) -> None:
    """An acknowledged cancel proves nothing: the next observation tells what happened."""
    op = await rig.created({"_sim": {"cancel": mode, "duration_polls": 3}})
    await rig.call(K.STATUS, op)
    assert isinstance((await rig.call(K.CANCEL, op)).outcome, o.CancelAcknowledged)
    seen = (await rig.call(K.STATUS, op)).outcome
    assert isinstance(seen, o.Observed) and seen.remote_status is next_state


async def test_refused_cancel(rig: Rig) -> None:
    """A provider refusing the cancel is a Rejected outcome."""
    op = await rig.created({"_sim": {"cancel": "reject"}})
    assert isinstance((await rig.call(K.CANCEL, op)).outcome, o.Rejected)


async def test_unreachable_provider_means_nothing_was_sent(rig: Rig) -> None:
    """Connection refused before sending: Throttled (safe to retry), not ambiguous."""
    doc = rig.doc | {"base_url": "http://127.0.0.1:9"}
    provider = HttpProvider(parse_provider(doc), rig.provider.session)
    outcome = (await provider.call(K.CREATE, rig.op())).outcome
    assert isinstance(outcome, o.Throttled) and "nothing was sent" in outcome.reason


async def test_missing_credential_sends_nothing(rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the auth variable the call is not made, and the reason names the variable."""
    monkeypatch.delenv("REPORTS_API_TOKEN")
    outcome = (await rig.call(K.CREATE, rig.op())).outcome
    assert isinstance(outcome, o.Throttled) and "REPORTS_API_TOKEN" in outcome.reason
    assert rig.sim.calls == []


async def test_credentials_go_on_the_wire_but_not_into_the_record(rig: Rig) -> None:
    """The bearer token authenticates the call and appears in no recorded metadata."""
    op = rig.op()
    reply = await rig.call(K.CREATE, op)
    assert rig.sim.calls[0].auth_valid
    described = rig.provider.describe(K.CREATE, op)
    assert described["headers"]["Authorization"] == "[redacted]"
    assert SECRET not in repr(reply) + repr(described)


async def test_status_url_on_another_origin_is_not_followed(rig: Rig) -> None:
    """A status URL pointing elsewhere is ignored: credentials never leave the provider."""
    op = await rig.created({})
    evil = replace(op, status_url="http://attacker.invalid/steal")
    described = rig.provider.describe(K.STATUS, evil)
    assert described["url"].startswith(rig.doc["base_url"])


async def test_token_and_reference_in_body_fields(rig: Rig) -> None:
    """A provider that takes the token and reference in the body gets them there."""
    create = rig.doc["create"] | {
        "idempotency": {"field": "idempotency_key"},
        "client_reference": {"field": "client_reference"},
    }
    provider = HttpProvider(parse_provider(rig.doc | {"create": create}), rig.provider.session)
    op = rig.op({"account": "a"})
    first = (await provider.call(K.CREATE, op)).outcome
    again = (await provider.call(K.CREATE, op)).outcome
    assert isinstance(first, o.Accepted) and isinstance(again, o.Accepted)
    assert first.job_id == again.job_id  # the body token made the retry idempotent
    (job,) = rig.sim.jobs.values()
    assert job.idempotency_key == op.idempotency_token and job.client_reference == op.operation_id


async def test_failed_and_timed_jobs_are_observed_as_such(rig: Rig) -> None:
    """A failing job is observed failed; a job of N seconds is running until then."""
    failing = await rig.created({"_sim": {"outcome": "failed", "duration_polls": 1}})
    seen = (await rig.call(K.STATUS, failing)).outcome
    assert isinstance(seen, o.Observed) and seen.remote_status is RemoteStatus.FAILED
    timed = await rig.created({"_sim": {"duration_seconds": 30}})
    seen = (await rig.call(K.STATUS, timed)).outcome
    assert isinstance(seen, o.Observed) and seen.remote_status is RemoteStatus.RUNNING


async def test_a_provider_answering_one_token_with_two_ids(rig: Rig) -> None:
    """The contract violation is visible at the provider level: two ids, one token."""
    op = rig.op({"_sim": {"different_id_on_retry": True}})
    first = (await rig.call(K.CREATE, op)).outcome
    second = (await rig.call(K.CREATE, op)).outcome
    assert isinstance(first, o.Accepted) and isinstance(second, o.Accepted)
    assert first.job_id != second.job_id
    found = (await rig.call(K.RECONCILE, op)).outcome
    assert isinstance(found, o.Found) and set(found.job_ids) == {first.job_id, second.job_id}


@pytest.mark.parametrize(
    ("field", "expected"),
    [("state", b'"running"'), ("no_such_field", None)],
)
async def test_a_get_result_is_narrowed_to_its_field(
    monkeypatch: pytest.MonkeyPatch, field: str, expected: bytes | None
) -> None:
    """`[result] field` with `from = "path"`: the GET's JSON answer is narrowed to that part
    (stored as JSON); an answer without it is a missing result, never the whole answer."""
    result = {"path": "/v1/jobs/{job_id}", "field": field, "content_type": "application/json"}
    async for rig in make_rig(monkeypatch, result=result):
        op = await rig.created({"_sim": {"duration_polls": 3}})
        reply = await rig.call(K.RESULT, op)
        if expected is None:
            assert isinstance(reply.outcome, o.ResultMissing), reply
            assert "no result at `no_such_field`" in reply.outcome.reason
        else:
            assert reply.fetched is not None and reply.fetched.content == expected
            assert reply.fetched.content_type == "application/json"


async def test_a_reused_status_request_keeps_the_credential_out_and_follows_the_url(
    rig: Rig,
) -> None:
    """A status read's request is made once per operation and status URL and copied for
    each poll: the credential and trace headers a call adds never reach the copy kept (nor
    the record), each call gets its own traceparent, and a new status URL is a new request."""
    op = await rig.created({})
    for _ in range(3):  # sent before it is ever described: the copy kept is made here
        reply = await rig.call(K.STATUS, op)
        assert isinstance(reply.outcome, o.Observed), reply
    first = rig.provider.describe(K.STATUS, op)
    again = rig.provider.describe(K.STATUS, op)
    assert again == first and again["headers"] is not first["headers"]
    assert again["headers"]["Authorization"] == "[redacted]"
    assert SECRET not in repr(again) and "traceparent" not in again["headers"]
    sent = [c for c in rig.sim.calls if c.method == "GET"]
    assert len(sent) == 3 and all(c.auth_valid for c in sent)
    parents = {c.traceparent for c in sent}
    assert len(parents) == 3 and None not in parents
    moved = replace(op, status_url=f"/v1/jobs/{op.remote_job_id}?view=full")
    assert rig.provider.describe(K.STATUS, moved)["url"].endswith("?view=full")
