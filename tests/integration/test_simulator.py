"""The provider simulator over real loopback HTTP: its API, its faults, its webhooks."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from standardwebhooks import Webhook

import jobtrail
from jobtrail.simulator import Simulator, SimulatorThread, new_webhook_secret

from waits import until_true_async

REPORT = {
    "account": "acct_218",
    "range": {"start": "2025-02-01", "end": "2025-02-28"},
    "format": "csv",
}


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    simulator = Simulator()
    await simulator.start()
    yield simulator
    await simulator.close()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def call(
    http: aiohttp.ClientSession,
    method: str,
    url: str,
    *,
    body: Any = None,
    headers: dict[str, str] | None = None,
    client_timeout: float | None = None,
) -> Answer:
    async with http.request(
        method,
        url,
        json=body,
        headers=headers,
        timeout=aiohttp.ClientTimeout(total=client_timeout) if client_timeout else None,
    ) as resp:
        return Answer(resp.status, dict(resp.headers), await resp.read())


async def create(
    http: aiohttp.ClientSession,
    sim: Simulator,
    sim_faults: dict[str, Any] | None = None,
    *,
    key: str | None = None,
    ref: str | None = None,
    body: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    client_timeout: float | None = None,
) -> Answer:
    payload = dict(body if body is not None else REPORT)
    if sim_faults is not None:
        payload["_sim"] = sim_faults
    sent = dict(headers or {})
    if key is not None:
        sent["Idempotency-Key"] = key
    if ref is not None:
        sent["X-Client-Reference"] = ref
    return await call(
        http,
        "POST",
        f"{sim.base_url}/v1/reports",
        body=payload,
        headers=sent,
        client_timeout=client_timeout,
    )


async def status(http: aiohttp.ClientSession, sim: Simulator, job_id: str) -> Answer:
    return await call(http, "GET", f"{sim.base_url}/v1/jobs/{job_id}")


async def poll_until_terminal(http: aiohttp.ClientSession, sim: Simulator, job_id: str) -> Any:
    for _ in range(50):
        answer = await status(http, sim, job_id)
        if answer.status == 200 and answer.json()["state"] in ("succeeded", "failed", "cancelled"):
            return answer.json()
    raise AssertionError("job never finished")


async def new_job(
    http: aiohttp.ClientSession, sim: Simulator, sim_faults: dict[str, Any] | None = None
) -> str:
    answer = await create(http, sim, sim_faults)
    assert answer.status == 202
    return str(answer.json()["job_id"])


async def result(http: aiohttp.ClientSession, sim: Simulator, job_id: str) -> Answer:
    return await call(http, "GET", f"{sim.base_url}/v1/jobs/{job_id}/result")


async def listed(http: aiohttp.ClientSession, sim: Simulator, ref: str) -> list[dict[str, Any]]:
    answer = await call(http, "GET", f"{sim.base_url}/v1/reports?client_reference={ref}")
    assert answer.status == 200
    data: list[dict[str, Any]] = answer.json()["data"]
    return data


# -- happy path -----------------------------------------------------------


async def test_happy_path_create_poll_collect(sim: Simulator, http: aiohttp.ClientSession) -> None:
    """A default job is queued, runs on read 1, succeeds on read 2, then serves its CSV."""
    created = await create(http, sim, ref="op_1")
    assert created.status == 202
    job_id = created.json()["job_id"]
    assert job_id.startswith("job_")
    assert created.headers["Location"] == f"/v1/jobs/{job_id}"
    assert created.json() == {
        "job_id": job_id,
        "state": "queued",
        "status_url": f"/v1/jobs/{job_id}",
    }

    first = (await status(http, sim, job_id)).json()
    assert first["state"] == "running"
    assert first["progress"] == {"completed": 1, "total": 3}
    assert first["client_reference"] == "op_1"
    assert first["updated_at"].endswith("Z")
    second = (await status(http, sim, job_id)).json()
    assert second["state"] == "succeeded"
    assert second["progress"] == {"completed": 3, "total": 3}
    assert sim.jobs[job_id].version == 3

    got = await result(http, sim, job_id)
    assert got.status == 200
    assert got.headers["Content-Type"].startswith("text/csv")
    assert got.headers["X-Checksum-SHA256"] == hashlib.sha256(got.body).hexdigest()
    assert got.headers["X-Record-Count"] == "3"
    lines = got.body.decode().splitlines()
    assert lines[0] == "id,status,value"
    assert [line.split(",")[:2] for line in lines[1:]] == [
        ["item-1", "succeeded"],
        ["item-2", "succeeded"],
        ["item-3", "succeeded"],
    ]


async def test_unknown_job_is_404_everywhere(sim: Simulator, http: aiohttp.ClientSession) -> None:
    """Status, cancel and result of a job that does not exist answer 404."""
    base = f"{sim.base_url}/v1/jobs/job_nope"
    assert (await call(http, "GET", base)).status == 404
    assert (await call(http, "POST", f"{base}/cancel")).status == 404
    assert (await call(http, "GET", f"{base}/result")).status == 404


async def test_stats_count_calls_by_kind(sim: Simulator, http: aiohttp.ClientSession) -> None:
    """The admin stats count created jobs and every call by kind."""
    job_id = await new_job(http, sim)
    await poll_until_terminal(http, sim, job_id)
    await result(http, sim, job_id)
    await call(http, "POST", f"{sim.base_url}/v1/jobs/{job_id}/cancel")
    await listed(http, sim, "nobody")
    stats = (await call(http, "GET", f"{sim.base_url}/_sim/stats")).json()
    assert stats["jobs_created"] == 1
    assert stats["calls"] == {"create": 1, "status": 2, "cancel": 1, "result": 1, "list": 1}
    assert stats == {**sim.stats(), "calls": stats["calls"]}


# -- idempotency ------------------------------------------------------------


async def test_same_key_same_body_replays_the_original(
    sim: Simulator, http: aiohttp.ClientSession
) -> None:
    """Same key and body: the original answer again, marked replayed, and no new job."""
    first = await create(http, sim, key="idem_a")
    again = await create(http, sim, key="idem_a")
    assert again.status == first.status == 202
    assert again.body == first.body
    assert again.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first.headers
    assert sim.stats()["jobs_created"] == 1


async def test_key_in_body_field_is_honoured(sim: Simulator, http: aiohttp.ClientSession) -> None:
    """An ``idempotency_key`` body field works like the header."""
    body = {**REPORT, "idempotency_key": "idem_body"}
    first = await create(http, sim, body=body)
    again = await create(http, sim, body=body)
    assert again.json()["job_id"] == first.json()["job_id"]
    assert sim.jobs[first.json()["job_id"]].idempotency_key == "idem_body"


async def test_same_key_different_body_is_422(sim: Simulator, http: aiohttp.ClientSession) -> None:
    """A key reused with a changed body is refused and creates nothing."""
    await create(http, sim, key="idem_b")
    changed = await create(http, sim, key="idem_b", body={**REPORT, "format": "json"})
    assert changed.status == 422
    assert changed.json()["error"] == "idempotency_key_reused"
    assert sim.stats()["jobs_created"] == 1


async def test_same_key_in_flight_is_409(sim: Simulator, http: aiohttp.ClientSession) -> None:
    """While the first request with a key is still being answered, a second one gets 409."""
    faults = {"delay_create": 0.4}
    first = asyncio.create_task(create(http, sim, faults, key="idem_c"))

    def arrived() -> bool:  # in flight: the simulator holds the job, answering 0.4 s later
        return any(j.idempotency_key == "idem_c" for j in sim.jobs.values())

    await until_true_async(arrived, 10, "the first create reached the simulator")
    racing = await create(http, sim, faults, key="idem_c")
    assert racing.status == 409
    assert racing.json()["error"] == "idempotency_key_in_flight"
    assert racing.headers["Retry-After"] == "1"
    assert (await first).status == 202


async def test_no_key_means_no_idempotency(sim: Simulator, http: aiohttp.ClientSession) -> None:
    """Without a key, the same body twice creates two jobs."""
    await create(http, sim)
    await create(http, sim)
    assert sim.stats()["jobs_created"] == 2


# -- create-side faults -----------------------------------------------------


async def test_drop_create_answer_then_same_key_finds_original(
    sim: Simulator, http: aiohttp.ClientSession
) -> None:
    """A dropped answer still creates the job; the list finds it and a same-key retry returns it."""
    with pytest.raises(aiohttp.ServerDisconnectedError):
        await create(http, sim, {"drop_create_answer": True}, key="idem_d", ref="op_d")
    jobs = await listed(http, sim, "op_d")
    assert len(jobs) == 1
    retry = await create(http, sim, {"drop_create_answer": True}, key="idem_d", ref="op_d")
    assert retry.status == 202
    assert retry.json()["job_id"] == jobs[0]["job_id"]
    dropped = next(c for c in sim.calls if c.kind == "create")
    assert dropped.status is None


async def test_drop_create_answer_n_times(sim: Simulator, http: aiohttp.ClientSession) -> None:
    """``drop_create_answer: 2`` drops the first two same-key requests, not the third."""
    for _ in range(2):
        with pytest.raises(aiohttp.ServerDisconnectedError):
            await create(http, sim, {"drop_create_answer": 2}, key="idem_d2")
    assert (await create(http, sim, {"drop_create_answer": 2}, key="idem_d2")).status == 202
    assert sim.stats()["jobs_created"] == 1


async def test_delay_create_times_out_the_client(
    sim: Simulator, http: aiohttp.ClientSession
) -> None:
    """A delayed answer makes an impatient client time out although the job exists."""
    with pytest.raises(TimeoutError):
        await create(http, sim, {"delay_create": 0.5}, key="idem_e", ref="op_e", client_timeout=0.1)
    assert len(await listed(http, sim, "op_e")) == 1


@pytest.mark.parametrize(
    ("throttle", "expect_header"),
    [
        ({"status": 429, "retry_after": 3, "times": 2}, "3"),
        ({"status": 503, "retry_after": "date"}, "GMT"),
    ],
)
async def test_throttle_create_answers_then_creates(
    sim: Simulator, http: aiohttp.ClientSession, throttle: dict[str, Any], expect_header: str
) -> None:
    """Throttled creates carry Retry-After (seconds or HTTP-date) and create nothing."""
    times = throttle.get("times", 1)
    for _ in range(times):
        answer = await create(http, sim, {"throttle_create": throttle}, key="idem_f")
        assert answer.status == throttle["status"]
        assert expect_header in answer.headers["Retry-After"]
    assert sim.stats()["jobs_created"] == 0
    assert (await create(http, sim, {"throttle_create": throttle}, key="idem_f")).status == 202
    assert sim.stats()["jobs_created"] == 1


async def test_reject_create_is_definitive(sim: Simulator, http: aiohttp.ClientSession) -> None:
    """A rejected create answers the configured 4xx every time and creates nothing."""
    faults = {"reject_create": {"status": 403, "message": "account suspended"}}
    for _ in range(2):
        answer = await create(http, sim, faults, key="idem_g")
        assert answer.status == 403
        assert answer.json()["message"] == "account suspended"
    assert sim.stats()["jobs_created"] == 0


async def test_create_error_after_accept_is_ambiguous(
    sim: Simulator, http: aiohttp.ClientSession
) -> None:
    """A 502 after accepting hides a real job, which a same-key retry then returns."""
    first = await create(http, sim, {"create_error_after_accept": 502}, key="idem_h", ref="op_h")
    assert first.status == 502
    retry = await create(http, sim, {"create_error_after_accept": 502}, key="idem_h", ref="op_h")
    assert retry.status == 202
    assert retry.json()["job_id"] == (await listed(http, sim, "op_h"))[0]["job_id"]


@pytest.mark.parametrize("kind", ["not_json", "missing_job_id", "wrong_types"])
async def test_malformed_create_is_replayed(
    sim: Simulator, http: aiohttp.ClientSession, kind: str
) -> None:
    """A malformed create answer is unusable, yet the job exists and retries get the same answer."""
    first = await create(http, sim, {"malformed_create": kind}, key=f"idem_{kind}", ref=kind)
    assert first.status == 202
    if kind == "not_json":
        with pytest.raises(ValueError):
            first.json()
    elif kind == "missing_job_id":
        assert "job_id" not in first.json()
    else:
        assert first.json()["job_id"] == 12345
    again = await create(http, sim, {"malformed_create": kind}, key=f"idem_{kind}", ref=kind)
    assert again.body == first.body
    assert len(await listed(http, sim, kind)) == 1


async def test_malformed_create_huge(sim: Simulator, http: aiohttp.ClientSession) -> None:
    """The huge answer announces 50 MB of JSON; a client can refuse it from the headers."""
    url = f"{sim.base_url}/v1/reports"
    async with http.post(url, json={"_sim": {"malformed_create": "huge"}}) as resp:
        assert resp.status == 202
        assert int(resp.headers["Content-Length"]) > 50 * 1024 * 1024
        assert (await resp.content.read(10)).startswith(b'{"job_id"')
    assert sim.stats()["jobs_created"] == 1


async def test_different_id_on_retry_violates_the_contract(
    sim: Simulator, http: aiohttp.ClientSession
) -> None:
    """With a lost answer, the same-key retry is answered with a brand-new job id."""
    faults = {"drop_create_answer": 1, "different_id_on_retry": True}
    with pytest.raises(aiohttp.ServerDisconnectedError):
        await create(http, sim, faults, key="idem_i", ref="op_i")
    retry = await create(http, sim, faults, key="idem_i", ref="op_i")
    jobs = await listed(http, sim, "op_i")
    assert len(jobs) == 2
    assert retry.json()["job_id"] == jobs[1]["job_id"] != jobs[0]["job_id"]


@pytest.mark.parametrize(
    ("create_status", "location"), [(201, "Operation-Location"), (200, "body"), (202, "Location")]
)
async def test_create_conventions(
    sim: Simulator, http: aiohttp.ClientSession, create_status: int, location: str
) -> None:
    """The status code and the carrier of the status URL follow the configured convention."""
    faults = {"create_status": create_status, "status_location": location}
    answer = await create(http, sim, faults)
    assert answer.status == create_status
    job_id = answer.json()["job_id"]
    assert answer.json()["status_url"] == f"/v1/jobs/{job_id}"
    if location == "body":
        assert "Location" not in answer.headers
        assert "Operation-Location" not in answer.headers
    elif location == "Operation-Location":
        assert answer.headers["Operation-Location"] == f"{sim.base_url}/v1/jobs/{job_id}"
    else:
        assert answer.headers["Location"] == f"/v1/jobs/{job_id}"


async def test_sync_result(sim: Simulator, http: aiohttp.ClientSession) -> None:
    """A synchronous result answers 200 with the rows; the job is already succeeded."""
    answer = await create(http, sim, {"sync_result": True, "items": 2})
    assert answer.status == 200
    body = answer.json()
    assert body["state"] == "succeeded"
    assert [r["id"] for r in body["result"]["rows"]] == ["item-1", "item-2"]
    assert (await status(http, sim, body["job_id"])).json()["state"] == "succeeded"


async def test_invalid_sim_is_refused(sim: Simulator, http: aiohttp.ClientSession) -> None:
    """An unknown or mistyped fault is a 400, never a silently happy job."""
    assert (await create(http, sim, {"drop_create_anwser": 1})).status == 400
    assert (await create(http, sim, {"duration_polls": "3"})).status == 400
    assert sim.stats()["jobs_created"] == 0


# -- observation-side faults -------------------------------------------------


async def test_duration_polls_and_failed_outcome(
    sim: Simulator, http: aiohttp.ClientSession
) -> None:
    """A job ends on the n-th read; a failed outcome carries an error and has no result."""
    job_id = await new_job(http, sim, {"duration_polls": 4, "outcome": "failed", "items": 8})
    seen = [(await status(http, sim, job_id)).json() for _ in range(4)]
    assert [s["state"] for s in seen] == ["running", "running", "running", "failed"]
    assert [s["progress"]["completed"] for s in seen[:3]] == [2, 4, 6]
    assert seen[3]["error"]["code"] == "job_failed"
    no_result = await result(http, sim, job_id)
    assert no_result.status == 409
    assert no_result.json()["state"] == "failed"


async def test_duration_seconds_runs_on_the_clock(
    sim: Simulator, http: aiohttp.ClientSession
) -> None:
    """A time-based job reports running until its time is up, and finishes even unpolled."""
    polled = await new_job(http, sim, {"duration_seconds": 0.3, "items": 100})
    unpolled = await new_job(http, sim, {"duration_seconds": 0.3})
    early = (await status(http, sim, polled)).json()
    assert early["state"] == "running"
    assert early["progress"]["completed"] < 100
    await asyncio.sleep(0.4)  # the behaviour under test: time passing ends the job, unpolled
    assert sim.jobs[unpolled].state == "succeeded"
    assert (await status(http, sim, polled)).json()["state"] == "succeeded"


async def test_throttle_status_does_not_advance(
    sim: Simulator, http: aiohttp.ClientSession
) -> None:
    """Throttled status reads answer 429 with Retry-After and leave the job where it was."""
    job_id = await new_job(
        http, sim, {"throttle_status": {"status": 429, "retry_after": 2, "times": 2}}
    )
    for _ in range(2):
        answer = await status(http, sim, job_id)
        assert answer.status == 429
        assert answer.headers["Retry-After"] == "2"
    assert sim.jobs[job_id].state == "queued"
    assert (await status(http, sim, job_id)).json()["state"] == "running"


async def test_status_error_then_recovers(sim: Simulator, http: aiohttp.ClientSession) -> None:
    """The first k status reads answer 500, later ones work."""
    job_id = await new_job(http, sim, {"status_error": 2})
    assert [(await status(http, sim, job_id)).status for _ in range(3)] == [500, 500, 200]
    assert sim.jobs[job_id].status_reads == 3


async def test_status_retry_after_hint(sim: Simulator, http: aiohttp.ClientSession) -> None:
    """Running answers carry the provider's Retry-After hint; the terminal one does not."""
    job_id = await new_job(http, sim, {"status_retry_after": 7})
    assert (await status(http, sim, job_id)).headers["Retry-After"] == "7"
    assert "Retry-After" not in (await status(http, sim, job_id)).headers


async def test_never_finish_even_at_full_progress(
    sim: Simulator, http: aiohttp.ClientSession
) -> None:
    """A never-finishing job reaches 100 % progress yet stays running until cancelled."""
    job_id = await new_job(http, sim, {"never_finish": True})
    for _ in range(6):
        body = (await status(http, sim, job_id)).json()
    assert body["state"] == "running"
    assert body["progress"] == {"completed": 3, "total": 3}
    assert (await call(http, "POST", f"{sim.base_url}/v1/jobs/{job_id}/cancel")).status == 202
    assert (await status(http, sim, job_id)).json()["state"] == "cancelled"


# -- cancel -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "cancel_status", "final"),
    [
        ("honour", 202, "cancelled"),
        ("ignore", 202, "succeeded"),
        ("race", 202, "succeeded"),
        ("reject", 409, "succeeded"),
    ],
)
async def test_cancel_modes(
    sim: Simulator, http: aiohttp.ClientSession, mode: str, cancel_status: int, final: str
) -> None:
    """Each cancel mode answers as configured and the job ends as that mode implies."""
    job_id = await new_job(http, sim, {"cancel": mode, "duration_polls": 3})
    await status(http, sim, job_id)
    answer = await call(http, "POST", f"{sim.base_url}/v1/jobs/{job_id}/cancel")
    assert answer.status == cancel_status
    if cancel_status == 202:
        assert answer.json() == {"job_id": job_id, "state": "cancelling"}
    else:
        assert answer.json()["error"] == "not_cancellable"
    after = (await status(http, sim, job_id)).json()["state"]
    if mode in ("honour", "race"):
        assert after == final  # decided on the very next read
    assert (await poll_until_terminal(http, sim, job_id))["state"] == final


async def test_cancel_terminal_job_is_409(sim: Simulator, http: aiohttp.ClientSession) -> None:
    """A finished job is not cancellable and says which state it is in."""
    job_id = await new_job(http, sim, {"duration_polls": 1})
    await status(http, sim, job_id)
    answer = await call(http, "POST", f"{sim.base_url}/v1/jobs/{job_id}/cancel")
    assert answer.status == 409
    assert answer.json()["state"] == "succeeded"


# -- result faults --------------------------------------------------------------


async def test_result_not_ready_is_409(sim: Simulator, http: aiohttp.ClientSession) -> None:
    """Asking for the result of a running job answers 409."""
    job_id = await new_job(http, sim)
    assert (await result(http, sim, job_id)).status == 409


async def finished(http: aiohttp.ClientSession, sim: Simulator, faults: dict[str, Any]) -> str:
    job_id = await new_job(http, sim, {"duration_polls": 1, **faults})
    await status(http, sim, job_id)
    return job_id


async def test_result_failed_items(sim: Simulator, http: aiohttp.ClientSession) -> None:
    """A batch result lists its failed items with status ``failed``."""
    got = await result(http, sim, await finished(http, sim, {"items": 5, "failed_items": 2}))
    statuses = [line.split(",")[1] for line in got.body.decode().splitlines()[1:]]
    assert statuses == ["succeeded"] * 3 + ["failed"] * 2
    assert got.headers["X-Record-Count"] == "5"


async def test_result_integrity_faults(sim: Simulator, http: aiohttp.ClientSession) -> None:
    """Checksum, content type and record count can each lie about the body."""
    bad_sum = await result(http, sim, await finished(http, sim, {"bad_checksum": True}))
    assert bad_sum.headers["X-Checksum-SHA256"] != hashlib.sha256(bad_sum.body).hexdigest()
    wrong_type = await result(http, sim, await finished(http, sim, {"wrong_content_type": True}))
    assert wrong_type.headers["Content-Type"].startswith("application/json")
    miscount = await result(http, sim, await finished(http, sim, {"record_count_mismatch": True}))
    assert miscount.headers["X-Record-Count"] == "4"
    assert len(miscount.body.decode().splitlines()) == 4  # header + 3 rows


async def test_distinct_result_per_job(sim: Simulator, http: aiohttp.ClientSession) -> None:
    """By default two jobs return the same bytes; with distinct_result each job's values are
    its own, the rows, checksum and record count still consistent."""
    same = [(await result(http, sim, await finished(http, sim, {}))).body for _ in range(2)]
    assert same[0] == same[1]
    answers = [await result(http, sim, await finished(http, sim, {"distinct_result": True}))
               for _ in range(2)]  # fmt: skip
    bodies = [a.body for a in answers]
    assert bodies[0] != bodies[1]
    for answer in answers:
        assert answer.headers["X-Checksum-SHA256"] == hashlib.sha256(answer.body).hexdigest()
        assert answer.headers["X-Record-Count"] == "3"
        rows = [line.split(",") for line in answer.body.decode().splitlines()]
        assert rows[0] == ["id", "status", "value"]
        assert [(r[0], r[1]) for r in rows[1:]] == [(f"item-{i}", "succeeded") for i in (1, 2, 3)]
        assert all(r[2].isdigit() for r in rows[1:])


@pytest.mark.parametrize("gone", [404, 410])
async def test_result_gone(sim: Simulator, http: aiohttp.ClientSession, gone: int) -> None:
    """A succeeded job whose result expired answers 404 or 410."""
    assert (
        await result(http, sim, await finished(http, sim, {"result_gone": gone}))
    ).status == gone


async def test_result_error_then_served(sim: Simulator, http: aiohttp.ClientSession) -> None:
    """The first k result reads answer 500, then the result is served."""
    job_id = await finished(http, sim, {"result_error": 2})
    assert [(await result(http, sim, job_id)).status for _ in range(3)] == [500, 500, 200]


# -- list, auth, calls, admin ---------------------------------------------------


async def test_list_by_client_reference(sim: Simulator, http: aiohttp.ClientSession) -> None:
    """The list endpoint returns exactly the jobs with the given client reference."""
    a = (await create(http, sim, ref="op_list")).json()["job_id"]
    await create(http, sim, ref="op_other")
    jobs = await listed(http, sim, "op_list")
    assert [j["job_id"] for j in jobs] == [a]
    assert set(jobs[0]) == {"job_id", "state", "client_reference", "created_at"}
    assert await listed(http, sim, "op_none") == []


async def test_auth_required_and_never_recorded(http: aiohttp.ClientSession) -> None:
    """Without the bearer token requests get 401 and are counted; the token is never kept."""
    async with Simulator(token="s3cret-token") as sim:
        assert (await create(http, sim)).status == 401
        bad = {"Authorization": "Bearer wrong"}
        assert (await create(http, sim, headers=bad)).status == 401
        good = {"Authorization": "Bearer s3cret-token"}
        job_id = (await create(http, sim, headers=good)).json()["job_id"]
        url = f"{sim.base_url}/v1/jobs/{job_id}"
        assert (await call(http, "GET", url)).status == 401
        assert (await call(http, "GET", url, headers=good)).status == 200
        assert sim.stats()["auth_failures"] == 3
        assert [(c.auth_present, c.auth_valid) for c in sim.calls] == [
            (False, False),
            (True, False),
            (True, True),
            (False, False),
            (True, True),
        ]
        admin = await call(http, "GET", f"{sim.base_url}/_sim/calls")
        dumped = json.dumps([sim.stats(), [c.to_json() for c in sim.calls]]) + admin.body.decode()
        assert "s3cret-token" not in dumped


async def test_calls_record_trace_headers(sim: Simulator, http: aiohttp.ClientSession) -> None:
    """Calls keep trace id, traceparent, key and reference, and can be filtered by job and kind."""
    trace = {
        "X-Trace-ID": "tr_0830d3",
        "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    }
    job_id = (await create(http, sim, key="idem_t", ref="op_t", headers=trace)).json()["job_id"]
    await call(http, "GET", f"{sim.base_url}/v1/jobs/{job_id}", headers=trace)
    url = f"{sim.base_url}/_sim/calls?job_id={job_id}&kind=create"
    calls = (await call(http, "GET", url)).json()["data"]
    assert len(calls) == 1
    assert calls[0]["trace_id"] == "tr_0830d3"
    assert calls[0]["traceparent"] == trace["traceparent"]
    assert calls[0]["idempotency_key"] == "idem_t"
    assert calls[0]["client_reference"] == "op_t"
    assert calls[0]["status"] == 202
    assert calls[0]["auth_present"] is False
    all_for_job = (await call(http, "GET", f"{sim.base_url}/_sim/calls?job_id={job_id}")).json()
    assert [c["kind"] for c in all_for_job["data"]] == ["create", "status"]


async def test_admin_faults_by_reference_and_default(
    sim: Simulator, http: aiohttp.ClientSession
) -> None:
    """Faults registered per client reference or as default apply to later jobs; typos are 400."""
    admin = f"{sim.base_url}/_sim/faults"
    body = {"client_reference": "op_slow", "faults": {"duration_polls": 5}}
    assert (await call(http, "POST", admin, body=body)).status == 200
    assert (await call(http, "POST", admin, body={"default": {"items": 7}})).status == 200
    bad = {"client_reference": "x", "faults": {"nope": 1}}
    assert (await call(http, "POST", admin, body=bad)).status == 400
    slow = (await create(http, sim, ref="op_slow")).json()["job_id"]
    other = (await create(http, sim, ref="op_fast")).json()["job_id"]
    job = (await call(http, "GET", f"{sim.base_url}/_sim/jobs/{slow}")).json()
    assert job["faults"]["duration_polls"] == 5
    assert job["faults"]["items"] == 7
    assert sim.jobs[other].faults.duration_polls == 2
    own = (await create(http, sim, body={**REPORT, "items": 4})).json()["job_id"]
    assert sim.jobs[own].faults.items == 4  # the request's own field beats the default
    sim.set_faults(client_reference="op_py", faults={"outcome": "failed", "duration_polls": 1})
    failing = (await create(http, sim, ref="op_py")).json()["job_id"]
    assert (await status(http, sim, failing)).json()["state"] == "failed"


async def test_admin_jobs_and_reset(sim: Simulator, http: aiohttp.ClientSession) -> None:
    """The admin API lists jobs with their details, and reset forgets everything."""
    job_id = (await create(http, sim, key="idem_r", ref="op_r")).json()["job_id"]
    await status(http, sim, job_id)
    jobs = (await call(http, "GET", f"{sim.base_url}/_sim/jobs")).json()["data"]
    assert jobs[0]["job_id"] == job_id
    assert jobs[0]["poll_count"] == 1
    assert jobs[0]["idempotency_key"] == "idem_r"
    assert jobs[0]["client_reference"] == "op_r"
    assert (await call(http, "POST", f"{sim.base_url}/_sim/reset")).status == 200
    assert sim.stats()["jobs_created"] == 0
    assert sim.calls == []
    assert (await status(http, sim, job_id)).status == 404


async def test_record_calls_off_still_counts(http: aiohttp.ClientSession) -> None:
    """With the calls log off (benchmarks), counters still work and nothing is logged."""
    async with Simulator(record_calls=False) as sim:
        await create(http, sim)
        assert sim.calls == []
        assert sim.stats()["calls"]["create"] == 1


# -- webhooks -----------------------------------------------------------------


@dataclass
class Receiver:
    """A tiny webhook endpoint that keeps what it received."""

    url: str = ""
    answer_status: int = 200
    received: list[tuple[dict[str, str], bytes]] = field(default_factory=list)


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    rec = Receiver()

    async def handle(request: web.Request) -> web.Response:
        rec.received.append((dict(request.headers), await request.read()))
        return web.Response(status=rec.answer_status)

    app = web.Application()
    app.router.add_post("/hook", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    rec.url = f"http://127.0.0.1:{runner.addresses[0][1]}/hook"
    yield rec
    await runner.cleanup()


async def run_job_with_webhooks(http: aiohttp.ClientSession, sim: Simulator, mode: str) -> str:
    job_id = await new_job(http, sim, {"webhooks": mode})
    await poll_until_terminal(http, sim, job_id)
    await sim.drain_webhooks()
    return job_id


async def test_webhooks_signed_with_standard_webhooks(
    http: aiohttp.ClientSession, receiver: Receiver
) -> None:
    """Each state change is POSTed once, signed so that standardwebhooks verifies it."""
    secret = new_webhook_secret()
    async with Simulator(webhook_url=receiver.url, webhook_secret=secret) as sim:
        job_id = await run_job_with_webhooks(http, sim, "normal")
        events = [Webhook(secret).verify(body, headers) for headers, body in receiver.received]
        assert [e["type"] for e in events] == ["job.updated", "job.updated"]
        assert [e["data"]["state"] for e in events] == ["running", "succeeded"]
        assert [e["data"]["version"] for e in events] == [2, 3]
        assert {e["data"]["job_id"] for e in events} == {job_id}
        assert receiver.received[0][0]["webhook-id"] == events[0]["id"]
        assert sim.stats()["webhooks_sent"] == 2


async def test_webhooks_duplicate_and_out_of_order(
    http: aiohttp.ClientSession, receiver: Receiver
) -> None:
    """``duplicate`` sends each event three times with one id; ``out_of_order`` ends first."""
    secret = new_webhook_secret()
    async with Simulator(webhook_url=receiver.url, webhook_secret=secret) as sim:
        await run_job_with_webhooks(http, sim, "duplicate")
        events = [json.loads(body) for _, body in receiver.received]
        assert [e["data"]["state"] for e in events] == ["running"] * 3 + ["succeeded"] * 3
        assert len({e["id"] for e in events[:3]}) == 1
        assert events[0]["id"] != events[3]["id"]
        receiver.received.clear()
        await run_job_with_webhooks(http, sim, "out_of_order")
        states = [json.loads(body)["data"]["state"] for _, body in receiver.received]
        assert states == ["succeeded", "running"]
        receiver.received.clear()
        await run_job_with_webhooks(http, sim, "none")
        assert receiver.received == []


async def test_webhooks_hmac_signing(http: aiohttp.ClientSession, receiver: Receiver) -> None:
    """The ``hmac`` mode signs ``<timestamp>.<body>`` with the raw secret, hex encoded."""
    async with Simulator(
        webhook_url=receiver.url, webhook_secret="plain-secret", webhook_signing="hmac"
    ) as sim:
        await run_job_with_webhooks(http, sim, "normal")
        assert len(receiver.received) == 2
        for headers, body in receiver.received:
            signed = headers["X-Webhook-Timestamp"].encode() + b"." + body
            digest = hmac.new(b"plain-secret", signed, hashlib.sha256).hexdigest()
            assert headers["X-Webhook-Signature"] == f"sha256={digest}"
            assert headers["X-Webhook-Id"] == json.loads(body)["id"]


async def test_webhook_failures_are_counted(
    http: aiohttp.ClientSession, receiver: Receiver
) -> None:
    """A receiver answering 500 does not disturb the job; failures are only counted."""
    receiver.answer_status = 500
    async with Simulator(webhook_url=receiver.url, webhook_secret=new_webhook_secret()) as sim:
        await run_job_with_webhooks(http, sim, "normal")
        assert sim.stats()["webhook_failures"] == 2
        assert sim.stats()["webhooks_sent"] == 0


async def test_signed_event_by_hand(http: aiohttp.ClientSession, receiver: Receiver) -> None:
    """``signed_event`` builds a verifiable event without sending it, for any state."""
    secret = new_webhook_secret()
    async with Simulator(webhook_secret=secret) as sim:
        job_id = await new_job(http, sim)
        headers, body = sim.signed_event(job_id, state="succeeded")
        event = Webhook(secret).verify(body, headers)
        assert event["data"]["state"] == "succeeded"
        assert event["data"]["job_id"] == job_id
        async with http.post(receiver.url, data=body, headers=headers) as resp:
            assert resp.status == 200
        assert receiver.received[0][1] == body


# -- running outside the test's loop -------------------------------------------------


def test_simulator_thread_serves_sync_clients() -> None:
    """SimulatorThread serves from its own loop and exposes stats, jobs and calls safely."""
    with SimulatorThread(token="tok") as sim:
        request = urllib.request.Request(
            f"{sim.base_url}/v1/reports",
            data=json.dumps(REPORT).encode(),
            headers={"Authorization": "Bearer tok", "Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=5) as resp:
            job_id = json.loads(resp.read())["job_id"]
        assert sim.stats()["jobs_created"] == 1
        assert sim.jobs[job_id].state == "queued"
        assert [c.kind for c in sim.calls] == ["create"]


def test_serve_forever_prints_url_and_stops_on_sigterm() -> None:
    """``serve_forever`` prints the base URL as one line and exits cleanly on SIGTERM."""
    src = str(Path(jobtrail.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    code = (
        "import asyncio\n"
        "from jobtrail.simulator import serve_forever\n"
        "asyncio.run(serve_forever('127.0.0.1', 0, token=None, webhook_url=None,"
        " webhook_secret=None, webhook_signing='standard'))\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, env=env, text=True
    ) as proc:
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:")
            with urllib.request.urlopen(f"{url}/_sim/stats", timeout=5) as resp:
                assert json.loads(resp.read())["jobs_created"] == 0
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=10) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
