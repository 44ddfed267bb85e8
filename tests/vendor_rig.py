"""The shipped vendor profiles against their simulator modes: each case names a profile, the
mode it talks to and how to call it (shared by the tests/integration/test_vendor_*.py files)."""

from __future__ import annotations

import tomllib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from jobtrail.core.model import Operation
from jobtrail.core.states import State
from jobtrail.profiles import shipped_profile
from jobtrail.providers.file.config import load_provider_text

from harness import SECRET, Harness, harness

ARM_RESOURCE = "/azure-arm/subscriptions/s1/resourceGroups/rg1/providers/Microsoft.Sim/widgets"
BATCH_REQUESTS = [
    {"custom_id": f"req-{n}", "params": {"model": "m", "max_tokens": 8, "messages": []}}
    for n in range(3)
]


@dataclass(frozen=True)
class Case:
    """A shipped profile, the simulator mode it talks to and how to call it."""

    profile: str
    mode: str
    base: Callable[[str, str], str]  # (simulator URL, test name) -> base URL
    body: dict[str, Any] | None
    env: str
    items: tuple[int, int] | None = None  # (succeeded, failed) items of a 3-item job
    failed_state: State = State.FAILED
    failed_items: tuple[int, int] | None = None  # items of a job whose requests all failed
    cancelling_word: str | None = None
    cancelled_state: State = State.CANCELLED
    partial_after_cancel: bool = False  # a cancelled job's finished items are collected
    cancel_call: str = ""  # the cancel request the vendor's reference names: METHOD PATH regex
    lost_state: State = State.SUCCEEDED  # after a lost create answer
    can_cancel: bool = True
    has_result: bool = True
    setup: bool = False  # the resource must exist first (ARM PATCH, DELETE, POST actions)
    path: dict[str, str] | None = None  # the create path's values, given at submit


CASES = {
    "openai-batch": Case(
        "openai-batch",
        "openai-batch",
        lambda sim, _: f"{sim}/openai",
        {
            "input_file_id": "file-abc",
            "endpoint": "/v1/chat/completions",
            "completion_window": "24h",
        },
        "OPENAI_API_KEY",
        items=(2, 1),  # the output file holds the good ones, the error file the failed one
        cancelling_word="cancelling",
        cancel_call=r"POST /openai/v1/batches/batch_\w+/cancel",
    ),
    "anthropic-batch": Case(
        "anthropic-batch",
        "anthropic-batch",
        lambda sim, _: f"{sim}/anthropic",
        {"requests": BATCH_REQUESTS},
        "ANTHROPIC_API_KEY",
        items=(2, 1),
        # a batch has no failed state of its own: every request errored, and the batch ended
        failed_state=State.SUCCEEDED,
        failed_items=(0, 3),
        cancelling_word="canceling",
        # a cancelled batch ends `ended` with canceled requests: cancelled, the in-flight
        # request's result collected
        partial_after_cancel=True,
        cancel_call=r"POST /anthropic/v1/messages/batches/msgbatch_\w+/cancel",
        lost_state=State.NEEDS_HUMAN,
    ),
    "gemini-batch": Case(
        "gemini-batch",
        "gemini-batch",
        lambda sim, _: f"{sim}/gemini",
        {
            "batch": {
                "inputConfig": {
                    "requests": {
                        "requests": [
                            {"request": {"contents": []}, "metadata": {"key": f"q{n}"}}
                            for n in range(3)
                        ]
                    }
                },
            }
        },
        "GEMINI_API_KEY",
        items=(2, 1),
        cancel_call=r"POST /gemini/v1beta/batches/\w+:cancel",
    ),
    "google-lro": Case(
        "google-lro",
        "google-lro",
        lambda sim, _: f"{sim}/google",
        {"displayName": "nightly export", "input": "gs://bucket/in"},
        "GOOGLE_OAUTH_ACCESS_TOKEN",
        cancel_call=r"POST /google/v1/projects/\w+/locations/[\w-]+/operations/[\w-]+:cancel",
    ),
    "azure-ai": Case(
        "azure-ai",
        "azure-ai",
        lambda sim, _: f"{sim}/azure-ai",
        {
            "displayName": "reviews",
            "analysisInput": {"documents": [{"id": "1", "language": "en", "text": "Great"}]},
            "tasks": [{"kind": "SentimentAnalysis", "taskName": "sentiment"}],
        },
        "AZURE_AI_KEY",
        cancelling_word="cancelling",
        cancel_call=r"POST /azure-ai/language/analyze-text/jobs/[\w-]+:cancel"
        r"\?api-version=2023-04-01",
    ),
}


VERTEX_BODY = {
    "displayName": "nightly",
    "model": "publishers/google/models/gemini-2.5-flash",
    "inputConfig": {"instancesFormat": "jsonl", "gcsSource": {"uris": ["gs://b/in.jsonl"]}},
    "outputConfig": {
        "predictionsFormat": "jsonl",
        "gcsDestination": {"outputUriPrefix": "gs://b/o"},
    },
}
# The profiles of issue 23, each against the simulator mode written from its vendor's
# reference (src/jobtrail/simulator/vendors/).
CASES.update(
    {
        "mistral-batch": Case(
            "mistral-batch",
            "mistral-batch",
            lambda sim, _: f"{sim}/mistral",
            {
                "input_files": ["file-abc"],
                "endpoint": "/v1/chat/completions",
                "model": "mistral-small-latest",
            },
            "MISTRAL_API_KEY",
            items=(2, 1),
            cancelling_word="CANCELLATION_REQUESTED",
            cancel_call=r"POST /mistral/v1/batch/jobs/\w+/cancel",
        ),
        "openai-responses": Case(
            "openai-responses",
            "openai-responses",
            lambda sim, _: f"{sim}/openai",
            {"model": "o3-deep-research", "input": "Research otters", "background": True},
            "OPENAI_API_KEY",
            cancel_call=r"POST /openai/v1/responses/resp_\w+/cancel",
            lost_state=State.NEEDS_HUMAN,
        ),
        "replicate": Case(
            "replicate",
            "replicate",
            lambda sim, _: f"{sim}/replicate",
            {"version": "acme/otter:5c7d5dc6", "input": {"prompt": "an otter"}},
            "REPLICATE_API_TOKEN",
            cancel_call=r"POST /replicate/v1/predictions/\w+/cancel",
            lost_state=State.NEEDS_HUMAN,
        ),
        "vertex-batch": Case(
            "vertex-batch",
            "vertex-batch",
            lambda sim, _: f"{sim}/vertex",
            VERTEX_BODY,
            "GOOGLE_OAUTH_ACCESS_TOKEN",
            cancelling_word="JOB_STATE_CANCELLING",
            cancel_call=r"POST /vertex/v1/projects/p1/locations/us-central1/"
            r"batchPredictionJobs/\d+:cancel",
            path={"project": "p1", "location": "us-central1"},
        ),
    }
)


def _arm(method: str, action: str = "") -> Callable[[str, str], str]:
    def base(sim: str, test: str) -> str:
        name = "w-" + "".join(c for c in test if c.isalnum())[:40].lower()
        return f"{sim}{ARM_RESOURCE}/{name}{action}?api-version=2024-01-01"

    return base


ARM_BODY = {"location": "westus", "properties": {"size": 3}}
CASES.update(
    {
        "azure-arm-put": Case(
            "azure-arm-put",
            "azure-arm",
            _arm("PUT"),
            ARM_BODY,
            "AZURE_ACCESS_TOKEN",
            can_cancel=False,
        ),
        "azure-arm-patch": Case(
            "azure-arm-patch",
            "azure-arm",
            _arm("PATCH"),
            {"properties": {"size": 4}},
            "AZURE_ACCESS_TOKEN",
            can_cancel=False,
            lost_state=State.NEEDS_HUMAN,
            setup=True,
        ),
        "azure-arm-delete": Case(
            "azure-arm-delete",
            "azure-arm",
            _arm("DELETE"),
            None,
            "AZURE_ACCESS_TOKEN",
            can_cancel=False,
            setup=True,
        ),
        "azure-arm-post": Case(
            "azure-arm-post",
            "azure-arm",
            _arm("POST", "/export"),
            {},
            "AZURE_ACCESS_TOKEN",
            can_cancel=False,
            lost_state=State.NEEDS_HUMAN,
            setup=True,
        ),
        "azure-arm-post-async": Case(
            "azure-arm-post-async",
            "azure-arm",
            _arm("POST", "/export"),
            {},
            "AZURE_ACCESS_TOKEN",
            can_cancel=False,
            lost_state=State.NEEDS_HUMAN,
            setup=True,
        ),
    }
)


@dataclass
class Rig:
    h: Harness
    case: Case
    baseline: int = 0  # jobs the test's setup made
    baseline_calls: int = 0  # create calls the test's setup made

    @property
    def mode(self) -> str:
        return self.case.mode

    def faults(self, **faults: Any) -> None:
        self.h.sim.set_vendor_faults(self.mode, faults)

    def created(self) -> int:
        return int(self.h.sim.vendor_summary(self.mode)["jobs_created"]) - self.baseline

    def create_calls(self) -> int:
        calls = self.h.sim.vendor_summary(self.mode)["calls"]
        return int(calls.get("create", 0)) - self.baseline_calls

    async def submit(self, **options: Any) -> Operation:
        if self.case.path:
            options.setdefault("path", self.case.path)
        return await self.h.submit(self.case.body, **options)

    async def finish(self, op: Operation) -> Operation:
        await self.h.run()
        return await self.h.op(op)

    async def provider_errors(self, op: Operation) -> list[Any]:
        attempts = await self.h.rt.ledger.store.attempts(op.operation_id)
        return [
            a.detail["provider_error"] for a in attempts if "provider_error" in (a.detail or {})
        ]

    async def remote_words(self, op: Operation) -> list[str | None]:
        observations = await self.h.rt.ledger.store.observations(op.operation_id)
        return [o.remote_state for o in observations]


@asynccontextmanager
async def vendor_rig(
    name: str,
    test: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    append: str = "",
    shared_clock: bool = False,
) -> AsyncIterator[Rig]:
    """The harness with the shipped profile `name` pointed at its simulator mode; `append`
    is TOML added at the end of the profile (a table it does not have); `shared_clock` as
    for the harness."""
    case = CASES[name]
    monkeypatch.setenv(case.env, SECRET)
    profile = shipped_profile(case.profile)
    assert profile is not None
    holder: dict[str, Any] = {}

    def edit(doc: dict[str, Any]) -> None:
        monkeypatch.setenv(str(holder["variable"]), case.base(doc["base_url"], test))
        spec = load_provider_text(profile.text + append, case.profile)
        doc.clear()
        doc.update(spec.document)
        doc["timeout"] = "2s"

    holder["variable"] = _base_url_env(profile.text)
    async with harness(
        tmp_path, edit=edit, monkeypatch=monkeypatch, shared_clock=shared_clock
    ) as h:
        rig = Rig(h, case)
        if case.setup:
            await _make_resource(h, case.base(h.sim.base_url or "", test))
            rig.baseline = rig.created()
            rig.baseline_calls = rig.create_calls()
        yield rig


@pytest.fixture(name="rig")
async def shipped_rig(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Rig]:
    """`rig`, parametrized indirectly by a shipped profile's name (a key of CASES): import
    `shipped_rig` into a test module to have it."""
    async with vendor_rig(request.param, request.node.name, tmp_path, monkeypatch) as opened:
        yield opened


async def _make_resource(h: Harness, url: str) -> None:
    """PUT the ARM resource a PATCH, DELETE or action needs, done at once."""
    resource = url.split("?")[0].removesuffix("/export") + "?api-version=2024-01-01"
    body = {**ARM_BODY, "_sim": {"headers": "none"}}
    headers = {"Authorization": f"Bearer {SECRET}"}
    async with (
        aiohttp.ClientSession() as session,
        session.put(resource, json=body, headers=headers) as r,
    ):
        assert r.status in (200, 201), await r.text()


def _base_url_env(text: str) -> str:
    return str(tomllib.loads(text)["base_url_env"])
