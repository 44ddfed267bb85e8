"""The simulator's vendor modes: the long-running conventions of real APIs, one module each.

Each mode is written from its vendor's public API reference (not from jobtrail's parser)
and mounted under its own path prefix beside the article API:

| mode | prefix |
|---|---|
| azure-arm | ``/azure-arm/subscriptions/...`` |
| azure-ai | ``/azure-ai/language/analyze-text/jobs`` |
| google-lro | ``/google/v1/projects/{p}/locations/{l}/...`` |
| openai-batch | ``/openai/v1/batches``, ``/openai/v1/files`` |
| anthropic-batch | ``/anthropic/v1/messages/batches`` |
| gemini-batch | ``/gemini/v1beta/...`` |
| mistral-batch | ``/mistral/v1/batch/jobs``, ``/mistral/v1/files`` |
| openai-responses | ``/openai/v1/responses`` |
| replicate | ``/replicate/v1/predictions`` |
| vertex-batch | ``/vertex/v1/projects/{p}/locations/{l}/batchPredictionJobs`` |
| bedrock-batch | ``/bedrock/model-invocation-job...`` (SigV4), ``/bedrock-s3/{bucket}/{key}`` |

The newer modes share one handler skeleton (vendors/skeleton.py) and write only their
vendor's words; ``vendors.skeleton.end_now`` ends a job without a status read and posts its
webhook, as a provider finishing on its own does.

Faults (see :class:`VendorFaults`) are set per mode with ``Simulator.set_vendor_faults`` or
``POST /_sim/vendors/{mode}/faults``, or per create with a test-only ``_sim`` object in a
JSON body; ``GET /_sim/vendors/{mode}`` tells what a mode saw (jobs made, calls by kind).
"""

from __future__ import annotations

import uuid

from aiohttp import web

from jobtrail.simulator.answers import error, json_response
from jobtrail.simulator.faults import FaultError
from jobtrail.simulator.vendors.anthropic_batch import AnthropicBatch
from jobtrail.simulator.vendors.azure_ai import AzureAI
from jobtrail.simulator.vendors.azure_arm import AzureArm
from jobtrail.simulator.vendors.bedrock_batch import BedrockBatch
from jobtrail.simulator.vendors.gemini_batch import GeminiBatch
from jobtrail.simulator.vendors.google_lro import GoogleLro
from jobtrail.simulator.vendors.mistral_batch import MistralBatch
from jobtrail.simulator.vendors.openai_batch import OpenAIBatch
from jobtrail.simulator.vendors.openai_responses import OpenAIResponses
from jobtrail.simulator.vendors.replicate import Replicate
from jobtrail.simulator.vendors.shared import VendorFaults, VendorState, parse_vendor_faults
from jobtrail.simulator.vendors.vertex_batch import VertexBatch

VENDOR_MODES = (
    "azure-arm",
    "azure-ai",
    "google-lro",
    "openai-batch",
    "anthropic-batch",
    "gemini-batch",
    "mistral-batch",
    "openai-responses",
    "replicate",
    "vertex-batch",
    "bedrock-batch",
)

__all__ = [
    "VENDOR_MODES",
    "VendorFaults",
    "VendorState",
    "mount_vendors",
    "parse_vendor_faults",
    "vendor_request_ids",
]


def vendor_request_ids(request: web.Request, n: int) -> dict[str, str] | None:
    """The headers naming an answer, for the vendors that use their own: Azure Resource
    Manager answers carry `x-ms-request-id` and `x-ms-correlation-request-id` and echo the
    caller's `x-ms-client-request-id`; Azure AI services answer with `apim-request-id`.
    None: the simulator's usual `X-Request-ID`."""
    answer = str(uuid.UUID(int=n, version=4))
    if request.path.startswith("/azure-arm/"):
        headers = {"x-ms-request-id": answer, "x-ms-correlation-request-id": answer}
        client = request.headers.get("x-ms-client-request-id")
        if client and len(client) <= 1024 and client.isprintable():
            headers["x-ms-client-request-id"] = client
        return headers
    if request.path.startswith("/azure-ai/"):
        return {"apim-request-id": answer}
    return None


def mount_vendors(app: web.Application, state: VendorState) -> None:
    """Add every vendor mode's routes and their admin window to ``app``."""
    for mode in (AzureArm, AzureAI, GoogleLro, OpenAIBatch, AnthropicBatch, GeminiBatch):
        mode(state).add_routes(app)
    for vendor in (MistralBatch, OpenAIResponses, Replicate, VertexBatch, BedrockBatch):
        vendor(state).add_routes(app)

    async def summary(request: web.Request) -> web.Response:
        mode = request.match_info["mode"]
        if mode not in VENDOR_MODES:
            return error(404, "not_found", f"no vendor mode {mode}; known: {list(VENDOR_MODES)}")
        return json_response(200, state.summary(mode))

    async def faults(request: web.Request) -> web.Response:
        mode = request.match_info["mode"]
        if mode not in VENDOR_MODES:
            return error(404, "not_found", f"no vendor mode {mode}; known: {list(VENDOR_MODES)}")
        try:
            spec = await request.json()
            state.set_faults(mode, spec)
        except (ValueError, FaultError) as exc:
            return error(400, "invalid_sim", str(exc))
        return json_response(200, {"ok": True})

    app.router.add_get("/_sim/vendors/{mode}", summary)
    app.router.add_post("/_sim/vendors/{mode}/faults", faults)
