"""The simulator's vendor modes speak each vendor's published shapes over loopback HTTP."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from jobtrail.simulator import Simulator

TOKEN = "sk-vendor-test-token"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
ANTHROPIC = {"x-api-key": TOKEN, "anthropic-version": "2023-06-01"}
GEMINI = {"x-goog-api-key": TOKEN}
ARM = "/azure-arm/subscriptions/sub1/resourceGroups/rg1/providers/Microsoft.Sim/widgets"
GOOGLE = "/google/v1/projects/p1/locations/us-central1"
OPENAI_BODY = {
    "input_file_id": "file-abc",
    "endpoint": "/v1/chat/completions",
    "completion_window": "24h",
    "metadata": {"jobtrail": "op_1"},
}
ANTHROPIC_BODY = {
    "requests": [
        {"custom_id": f"r{n}", "params": {"model": "m", "max_tokens": 5, "messages": []}}
        for n in range(3)
    ]
}
GEMINI_BODY = {
    "batch": {
        "displayName": "jobtrail-op_1",
        "inputConfig": {
            "requests": {
                "requests": [{"request": {}, "metadata": {"key": f"k{n}"}} for n in range(2)]
            }
        },
    }
}
LANGUAGE_BODY = {
    "displayName": "op_1",
    "analysisInput": {"documents": [{"id": "1", "text": "hi"}, {"id": "2", "text": ""}]},
    "tasks": [{"kind": "SentimentAnalysis", "taskName": "sentiment"}],
}


class Client:
    def __init__(self, sim: Simulator, session: aiohttp.ClientSession) -> None:
        self.sim, self.session = sim, session
        self.base = sim.base_url or ""

    async def call(
        self, method: str, path: str, headers: dict[str, str], body: Any = None
    ) -> tuple[int, dict[str, str], Any]:
        url = path if path.startswith("http") else self.base + path
        async with self.session.request(method, url, headers=headers, json=body) as r:
            raw = await r.read()
            is_json = r.content_type == "application/json" and raw
            return r.status, dict(r.headers), json.loads(raw) if is_json else raw or None


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    async with Simulator(token=TOKEN) as sim, aiohttp.ClientSession() as session:
        yield Client(sim, session)


async def test_openai_batch_lifecycle_files_and_list(client: Client) -> None:
    """An OpenAI batch validates, runs, completes with output and error JSONL files, and lists."""
    client.sim.set_vendor_faults("openai-batch", {"failed_items": 1, "duration_polls": 3})
    status, _, batch = await client.call("POST", "/openai/v1/batches", BEARER, OPENAI_BODY)
    assert status == 200 and batch["status"] == "validating" and batch["object"] == "batch"
    seen = []
    for _ in range(3):
        _, _, batch = await client.call("GET", f"/openai/v1/batches/{batch['id']}", BEARER)
        seen.append(batch["status"])
    assert seen == ["in_progress", "finalizing", "completed"]
    assert batch["request_counts"] == {"total": 3, "completed": 2, "failed": 1}
    _, _, out = await client.call(
        "GET", f"/openai/v1/files/{batch['output_file_id']}/content", BEARER
    )
    lines = [json.loads(x) for x in out.decode().splitlines()]
    assert [x["custom_id"] for x in lines] == ["request-1", "request-2"]
    assert lines[0]["response"]["status_code"] == 200
    _, _, errors = await client.call(
        "GET", f"/openai/v1/files/{batch['error_file_id']}/content", BEARER
    )
    assert json.loads(errors.decode())["response"]["status_code"] == 400
    _, _, listed = await client.call("GET", "/openai/v1/batches?limit=5", BEARER)
    assert listed["data"][0]["metadata"] == {"jobtrail": "op_1"}
    assert client.sim.vendor_summary("openai-batch")["jobs_created"] == 1


async def test_openai_expired_batch_keeps_finished_requests(client: Client) -> None:
    """An expired batch: finished requests in the output file, the rest in the error file
    with `response: null` and `batch_expired`."""
    faults = {"outcome": "cancelled", "finished_before_expiry": 1, "duration_polls": 1}
    client.sim.set_vendor_faults("openai-batch", faults)
    _, _, batch = await client.call("POST", "/openai/v1/batches", BEARER, OPENAI_BODY)
    _, _, batch = await client.call("GET", f"/openai/v1/batches/{batch['id']}", BEARER)
    assert batch["status"] == "expired" and batch["request_counts"]["completed"] == 1
    files = [batch["output_file_id"], batch["error_file_id"]]
    out, errors = [
        (await client.call("GET", f"/openai/v1/files/{f}/content", BEARER))[2] for f in files
    ]
    assert [json.loads(x)["custom_id"] for x in out.decode().splitlines()] == ["request-1"]
    gone = [json.loads(x) for x in errors.decode().splitlines()]
    assert [(x["custom_id"], x["response"], x["error"]["code"]) for x in gone] == [
        ("request-2", None, "batch_expired"),
        ("request-3", None, "batch_expired"),
    ]


async def test_openai_cancel_stays_cancelling_then_cancelled(client: Client) -> None:
    """An OpenAI cancel answers `cancelling`, stays there for the set reads, then `cancelled`."""
    client.sim.set_vendor_faults("openai-batch", {"cancel_polls": 2, "duration_polls": 10})
    _, _, batch = await client.call("POST", "/openai/v1/batches", BEARER, OPENAI_BODY)
    _, _, cancelled = await client.call("POST", f"/openai/v1/batches/{batch['id']}/cancel", BEARER)
    assert cancelled["status"] == "cancelling"
    seen = [
        (await client.call("GET", f"/openai/v1/batches/{batch['id']}", BEARER))[2]["status"]
        for _ in range(3)
    ]
    assert seen == ["cancelling", "cancelling", "cancelled"]


async def test_openai_faults_lost_answer_404_500_retry_after(client: Client) -> None:
    """A lost create answer still makes the batch; then a 404, a 500 and Retry-After."""
    client.sim.set_vendor_faults(
        "openai-batch",
        {"drop_create_answer": 1, "not_found_polls": 1, "status_errors": 1, "retry_after": 7},
    )
    with pytest.raises(aiohttp.ClientError):
        await client.call("POST", "/openai/v1/batches", BEARER, OPENAI_BODY)
    _, _, listed = await client.call("GET", "/openai/v1/batches", BEARER)
    batch_id = listed["data"][0]["id"]
    codes = []
    for _ in range(3):
        status, headers, _ = await client.call("GET", f"/openai/v1/batches/{batch_id}", BEARER)
        codes.append((status, headers.get("Retry-After")))
    assert codes == [(404, None), (500, None), (200, "7")]


async def test_anthropic_batch_results_and_cancel_finishing_in_flight(client: Client) -> None:
    """An Anthropic batch ends `ended`; a cancelled one finishes its in-flight request."""
    client.sim.set_vendor_faults("anthropic-batch", {"failed_items": 1, "duration_polls": 1})
    status, _, batch = await client.call(
        "POST", "/anthropic/v1/messages/batches", ANTHROPIC, ANTHROPIC_BODY
    )
    assert status == 200 and batch["processing_status"] == "in_progress"
    assert batch["request_counts"]["processing"] == 3 and batch["results_url"] is None
    _, _, batch = await client.call(
        "GET", f"/anthropic/v1/messages/batches/{batch['id']}", ANTHROPIC
    )
    assert batch["processing_status"] == "ended"
    assert batch["request_counts"]["succeeded"] == 2 and batch["request_counts"]["errored"] == 1
    _, _, raw = await client.call("GET", batch["results_url"], ANTHROPIC)
    results = [json.loads(x) for x in raw.decode().splitlines()]
    assert [(r["custom_id"], r["result"]["type"]) for r in results] == [
        ("r0", "succeeded"),
        ("r1", "succeeded"),
        ("r2", "errored"),
    ]
    client.sim.set_vendor_faults("anthropic-batch", {"duration_polls": 9, "in_flight_items": 1})
    _, _, second = await client.call(
        "POST", "/anthropic/v1/messages/batches", ANTHROPIC, ANTHROPIC_BODY
    )
    path = f"/anthropic/v1/messages/batches/{second['id']}"
    _, _, cancelling = await client.call("POST", f"{path}/cancel", ANTHROPIC)
    assert cancelling["processing_status"] == "canceling"
    _, _, ended = await client.call("GET", path, ANTHROPIC)
    _, _, ended = await client.call("GET", path, ANTHROPIC)
    assert ended["processing_status"] == "ended"
    assert ended["request_counts"]["succeeded"] == 1 and ended["request_counts"]["canceled"] == 2
    status, _, missing = await client.call("GET", path, {"x-api-key": TOKEN})
    assert status == 400 and missing["type"] == "error"


async def test_gemini_batch_states_display_name_and_list(client: Client) -> None:
    """A Gemini batch is an Operation with BATCH_STATE_* metadata, listed with its displayName."""
    client.sim.set_vendor_faults("gemini-batch", {"failed_items": 1})
    status, _, op = await client.call(
        "POST", "/gemini/v1beta/models/gemini-2.5-flash:batchGenerateContent", GEMINI, GEMINI_BODY
    )
    assert status == 200 and op["name"].startswith("batches/")
    assert op["metadata"]["state"] == "BATCH_STATE_PENDING" and "done" not in op
    states = []
    for _ in range(2):
        _, _, op = await client.call("GET", f"/gemini/v1beta/{op['name']}", GEMINI)
        states.append(op["metadata"]["state"])
    assert states == ["BATCH_STATE_RUNNING", "BATCH_STATE_SUCCEEDED"] and op["done"] is True
    items = op["response"]["inlinedResponses"]["inlinedResponses"]
    assert [("error" in i, i["metadata"]["key"]) for i in items] == [(False, "k0"), (True, "k1")]
    _, _, listed = await client.call("GET", "/gemini/v1beta/batches", GEMINI)
    assert listed["operations"][0]["metadata"]["displayName"] == "jobtrail-op_1"
    client.sim.set_vendor_faults("gemini-batch", {"duration_polls": 5})
    _, _, op = await client.call(
        "POST", "/gemini/v1beta/models/m:batchGenerateContent", GEMINI, GEMINI_BODY
    )
    assert (await client.call("POST", f"/gemini/v1beta/{op['name']}:cancel", GEMINI))[2] == {}
    for _ in range(2):
        _, _, op = await client.call("GET", f"/gemini/v1beta/{op['name']}", GEMINI)
    assert op["metadata"]["state"] == "BATCH_STATE_CANCELLED" and op["error"]["code"] == 1


async def test_google_operation_request_id_replays_and_cancel(client: Client) -> None:
    """An AIP-151 operation ends done with response; a requestId (a UUID4) replays, one that
    is not a UUID4 is refused; cancel ends code 1."""
    status, _, refused = await client.call("POST", f"{GOOGLE}/jobs?requestId=req-1", BEARER, {})
    assert status == 400 and refused["error"]["status"] == "INVALID_ARGUMENT"
    url = f"{GOOGLE}/jobs?jobId=j1&requestId=5f0c2a3e-7d1b-4c4e-9a6f-2b8d1e0c9f11"
    _, _, op = await client.call("POST", url, BEARER, {"input": "x"})
    assert op["done"] is False and op["metadata"]["target"].endswith("/jobs/j1")
    _, _, again = await client.call("POST", url, BEARER, {"input": "x"})
    assert again["name"] == op["name"]
    status, _, taken = await client.call("POST", f"{GOOGLE}/jobs?jobId=j1", BEARER, {})
    assert status == 409 and taken["error"]["status"] == "ALREADY_EXISTS"
    for _ in range(2):
        _, _, op = await client.call("GET", f"/google/v1/{op['name']}", BEARER)
    assert op["done"] is True and op["response"]["name"].endswith("/jobs/j1")
    _, _, second = await client.call(
        "POST", f"{GOOGLE}/jobs", BEARER, {"_sim": {"duration_polls": 9}}
    )
    await client.call("POST", f"/google/v1/{second['name']}:cancel", BEARER)
    for _ in range(2):
        _, _, second = await client.call("GET", f"/google/v1/{second['name']}", BEARER)
    assert second["done"] and second["error"]["code"] == 1
    assert second["metadata"]["requestedCancellation"] is True
    assert client.sim.vendor_summary("google-lro")["jobs_created"] == 2


async def test_azure_ai_operation_location_repeatability_and_cancel(client: Client) -> None:
    """An Azure AI job is a 202 with Operation-Location; a repeated request id replays it."""
    headers = {**BEARER, "Repeatability-Request-ID": "rid-1"}
    url = "/azure-ai/language/analyze-text/jobs?api-version=2023-04-01"
    status, answer, body = await client.call("POST", url, headers, LANGUAGE_BODY)
    assert status == 202 and body is None and answer["Repeatability-Result"] == "accepted"
    status, again, _ = await client.call("POST", url, headers, LANGUAGE_BODY)
    assert again["Operation-Location"] == answer["Operation-Location"]
    status, _, _ = await client.call("POST", url, headers, {**LANGUAGE_BODY, "displayName": "x"})
    assert status == 409
    seen = []
    for _ in range(2):
        _, _, job = await client.call("GET", answer["Operation-Location"], BEARER)
        seen.append(job["status"])
    assert seen == ["running", "succeeded"]
    client.sim.set_vendor_faults("azure-ai", {"duration_polls": 9, "cancel_polls": 1})
    _, second, _ = await client.call("POST", url, BEARER, LANGUAGE_BODY)
    job_url = second["Operation-Location"]
    cancel_url = job_url.replace("?", ":cancel?")
    assert (await client.call("POST", cancel_url, BEARER))[0] == 202
    seen = [(await client.call("GET", job_url, BEARER))[2]["status"] for _ in range(2)]
    assert seen == ["cancelling", "cancelled"]
    assert client.sim.vendor_summary("azure-ai")["jobs_created"] == 2


async def test_azure_arm_put_async_operation_and_idempotent_retry(client: Client) -> None:
    """An ARM PUT is 201 + Azure-AsyncOperation; the same PUT again joins the same operation."""
    url = f"{ARM}/w1?api-version=2024-01-01"
    body = {"location": "westus", "properties": {"size": 3}}
    status, headers, resource = await client.call("PUT", url, BEARER, body)
    assert status == 201 and resource["properties"]["provisioningState"] == "Accepted"
    status, again, _ = await client.call("PUT", url, BEARER, body)
    assert again["Azure-AsyncOperation"] == headers["Azure-AsyncOperation"]
    seen = []
    for _ in range(2):
        _, _, monitor = await client.call("GET", headers["Azure-AsyncOperation"], BEARER)
        seen.append(monitor["status"])
    assert seen == ["InProgress", "Succeeded"]
    _, _, resource = await client.call("GET", url, BEARER)
    assert resource["properties"] == {"size": 3, "provisioningState": "Succeeded"}
    assert client.sim.vendor_summary("azure-arm")["jobs_created"] == 1
    # ARM names its answers x-ms-request-id and echoes the caller's x-ms-client-request-id
    mine = {**BEARER, "x-ms-client-request-id": "9c4d50ee-2d56-4cd3-8152-34347dc9f2b0"}
    _, named, _ = await client.call("GET", url, mine)
    assert named["x-ms-client-request-id"] == mine["x-ms-client-request-id"]
    assert named["x-ms-request-id"] and "X-Request-ID" not in named


async def test_azure_arm_delete_location_and_failure(client: Client) -> None:
    """An ARM DELETE polls Location (202 then 204); a failed PUT shows Failed with an error."""
    url = f"{ARM}/w2?api-version=2024-01-01"
    await client.call("PUT", url, BEARER, {"location": "westus", "_sim": {"headers": "none"}})
    client.sim.set_vendor_faults("azure-arm", {"headers": "location"})
    status, headers, _ = await client.call("DELETE", url, BEARER)
    assert status == 202 and "Azure-AsyncOperation" not in headers
    codes = [(await client.call("GET", headers["Location"], BEARER))[0] for _ in range(2)]
    assert codes == [202, 204]
    assert (await client.call("DELETE", url, BEARER))[0] == 204
    client.sim.set_vendor_faults("azure-arm", {"outcome": "failed", "headers": "both"})
    _, headers, _ = await client.call("PUT", url, BEARER, {"location": "westus"})
    for _ in range(2):
        _, _, monitor = await client.call("GET", headers["Azure-AsyncOperation"], BEARER)
    assert monitor["status"] == "Failed" and monitor["error"]["code"] == "ProvisioningFailed"
    status, _, failed = await client.call("GET", headers["Location"], BEARER)
    assert status == 400 and failed["error"]["code"] == "ProvisioningFailed"


async def test_vendor_modes_refuse_bad_credentials_and_fault_typos(client: Client) -> None:
    """A wrong key is refused in the vendor's own words; an unknown fault name fails loudly."""
    status, _, body = await client.call(
        "POST", "/openai/v1/batches", {"Authorization": "Bearer nope"}, OPENAI_BODY
    )
    assert status == 401 and body["error"]["type"] == "invalid_request_error"
    with pytest.raises(ValueError, match="unknown vendor fault"):
        client.sim.set_vendor_faults("openai-batch", {"drop_answer": 1})
    status, _, _ = await client.call("POST", "/_sim/vendors/gemini-batch/faults", {}, {"x": 1})
    assert status == 400


async def test_gemini_file_input_answers_a_responses_file(client: Client) -> None:
    """A Gemini batch read from an input file ends with a JSONL responsesFile to download."""
    body = {"batch": {"displayName": "from-file", "inputConfig": {"fileName": "files/in-1"}}}
    _, _, op = await client.call(
        "POST", "/gemini/v1beta/models/m:batchGenerateContent", GEMINI, body
    )
    for _ in range(2):
        _, _, op = await client.call("GET", f"/gemini/v1beta/{op['name']}", GEMINI)
    name = op["response"]["responsesFile"]
    status, _, raw = await client.call(
        "GET", f"/gemini/download/v1beta/{name}:download?alt=media", GEMINI
    )
    assert status == 200
    lines = [json.loads(x) for x in raw.decode().splitlines()]
    assert [line["key"] for line in lines] == ["request-1", "request-2", "request-3"]
