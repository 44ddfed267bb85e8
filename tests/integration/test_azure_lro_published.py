"""Azure long-running operations in the shapes the published Azure LRO test server
(Azure/autorest.testserver, legacy/routes/lros.js, with swagger/lro.json for each
operation's method, codes and final-state-via) serves beyond the table of
test_azure_lro_table.py. Each row names the lros.js scenarios it stands for.

The count, over lros.js's 81 scenarios (its `coverage` keys):

- expressible by a provider file: 81 of 81. Method, path and body are the create's; the
  final-state-via is the [result] and [status.by_header] of the file (see azure_lro_run.py);
  the CustomHeader* scenarios' agreed `x-ms-client-request-id` is a static [headers] value;
  the monitors that keep their progress in a cookie need `cookies = "per-operation"`.
- ending as the published convention says: 64 (succeeded with the final body the
  final-state-via names, or failed/cancelled with the provider's error recorded; transient
  500s to a status read are read again).
- ending without success, where an Azure SDK raises at once: 15 LROError* scenarios of a
  broken service, all ending `needs_human` promptly (none waits for the result deadline).
  7 whose monitor never gives a readable state (200 `{}`, 200 with no body, JSON cut short)
  are never read as done: `[poll] max_refused_reads` such answers in a row, with backoff
  between them, are a broken status contract (`reads_unreadable`); 8 whose create answer
  or monitor URL is unusable (JSON cut short, 201 with no body, a 202 naming no monitor,
  `/foo` monitors) stop at the create or at the monitor.
- by design not as published: 2 (LRORetryErrorPost202Retry200Succeeded,
  LRORetryErrorPostAsyncRetrySucceeded): a POST answered 500 may have been carried out, and
  jobtrail never sends it again on its own (DESIGN rule 3); they end `needs_human`.

Outside lros.js, and not counted: lroParameterizedEndpoints.js (a host template: a
provider file with that host as its base_url expresses it), the LRO+paging routes of
paging.js (jobtrail does not page results) and swagger/lro.json's
postDoubleHeadersFinalLocationGet, which lros.js no longer serves (its shape is the
POST-202-Location_Azure-AsyncOperation-*-location rows of the table).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from azure_lro import BOTH, STATES, VARIANTS, AzureService, Scenario
from azure_lro_run import run_scenarios
from azure_lro_run import serving as azure_service

AAO = "Azure-AsyncOperation"
PUBLISHED = [
    # LROPutAsync{Retry,NoRetry}{Succeeded,Failed,Canceled}: 200, both headers, Accepted
    *(Scenario("PUT", 200, BOTH, s, "original-uri", "accepted-200") for s in STATES),
    Scenario("PUT", 200, AAO, "Succeeded", "original-uri", "accepted-200"),
    # LRODeleteProvisioning{SucceededWithBody,Failed,Canceled}: Location ends 200 + state
    *(Scenario("DELETE", 202, "Location", s, "none", "location-body") for s in STATES),
    *(Scenario("PUT", 202, "Location", s, "original-uri", "location-body") for s in STATES),
    # LRODelete200: DELETE 202 + Location, whose monitor ends 200 with no body
    Scenario("DELETE", 202, "Location", "Succeeded", "none", "location-empty"),
    # LROPut202Retry200, LROPutNonResourceInRetry: the Location answer is the result
    Scenario("PUT", 202, "Location", "Succeeded", "original-uri", "location-result"),
    # LROPutInlineComplete, LROPutInlineComplete201: done at create, no GET after
    Scenario("PUT", 200, "none", "Succeeded", "original-uri", "inline-only"),
    Scenario("PUT", 201, "none", "Succeeded", "original-uri", "inline-only"),
    # LROPutNoHeaderInRetry, LROPutAsync*, LRODeleteAsync*, CustomHeaderPostAsyncSucceded:
    # monitors whose progress lives in a cookie
    Scenario("PUT", 202, "Location", "Succeeded", "original-uri", "cookie"),
    Scenario("PUT", 201, BOTH, "Succeeded", "original-uri", "cookie"),
    Scenario("DELETE", 202, BOTH, "Failed", "none", "cookie"),
    Scenario("POST", 202, AAO, "Succeeded", "azure-async-operation", "cookie"),
    # CustomHeader{Put,Post}{Async,}Succeeded
    Scenario("PUT", 201, BOTH, "Succeeded", "original-uri", "custom-header"),
    Scenario("POST", 202, AAO, "Succeeded", "azure-async-operation", "custom-header"),
    Scenario("PUT", 201, "none", "Succeeded", "original-uri", "custom-header"),
    Scenario("POST", 202, "Location", "Succeeded", "location", "custom-header"),
    # LROPostAndGetList: the final GET on Location answers a JSON array
    Scenario("POST", 202, BOTH, "Succeeded", "location", "list-result"),
    # LROErrorPutAsyncNoPollingStatusPayload, LROErrorPostAsyncNoPollingPayload: the
    # monitor's 200s have no body: unreadable answers in a row stop for a person
    *(
        Scenario(m, c, BOTH, "Succeeded", f, "monitor-no-body", expect="needs_human")
        for m, c, f in (("PUT", 201, "original-uri"), ("POST", 202, "azure-async-operation"))
    ),
    # LROErrorPut201NoProvisioningStatePayload: never read as a success
    Scenario(
        "PUT", 201, "none", "Succeeded", "original-uri", "create-empty-201", expect="needs_human"
    ),
    # LRONonRetry{Put,Delete,Post}400: the create is refused
    Scenario("PUT", 201, "none", "Failed", "original-uri", "create-400"),
    Scenario("DELETE", 202, "Location", "Failed", "none", "create-400"),
    Scenario("POST", 202, "Location", "Failed", "location", "create-400"),
    # LRONonRetryPut201Creating400: the resource GET answers 400
    Scenario("PUT", 201, "none", "Failed", "original-uri", "monitor-400"),
    # LROPutSucceededNoBody, LROPutCanceled: 200 Updating/Accepted, then the resource's GET
    *(Scenario("PUT", 200, "none", s, "original-uri", "accepted-200") for s in STATES),
    # LROPostSuccededNoBody
    Scenario("POST", 202, "Location", "Succeeded", "location", "location-204"),
    # LROErrorPutAsyncInvalidHeader, LROErrorDeleteAsyncInvalidHeader
    Scenario("PUT", 200, BOTH, "Succeeded", "original-uri", "invalid-header", expect="needs_human"),
    Scenario("DELETE", 202, BOTH, "Succeeded", "none", "invalid-header", expect="needs_human"),
    # LRORetryErrorPost202Retry200Succeeded, LRORetryErrorPostAsyncRetrySucceeded: a POST
    # answered 500 may have been done; jobtrail never sends it again on its own (rule 3)
    Scenario("POST", 202, "Location", "Succeeded", "location", "retry-error", expect="needs_human"),
    Scenario(
        "POST", 202, BOTH, "Succeeded", "azure-async-operation", "retry-error", expect="needs_human"
    ),
    # LRONonRetryPut201Creating400InvalidJson
    Scenario("PUT", 201, "none", "Failed", "original-uri", "monitor-400-invalid"),
    # LROPutNoHeaderInRetry, LRODeleteNoHeaderInRetry, LROPostSuccededNoBody-like polls
    Scenario("PUT", 202, "Location", "Succeeded", "original-uri", "quiet-202"),
    Scenario("DELETE", 202, "Location", "Succeeded", "none", "quiet-202"),
    Scenario("POST", 202, "Location", "Succeeded", "location", "quiet-202"),
    # LROPutAsyncNoHeaderInRetry, LRODeleteAsyncNoHeaderInRetry, LROPut*AsyncInRetry
    Scenario("PUT", 201, AAO, "Succeeded", "original-uri", "bad-location"),
    Scenario("PUT", 202, AAO, "Succeeded", "original-uri", "bad-location"),
    Scenario("DELETE", 202, AAO, "Succeeded", "none", "bad-location"),
    Scenario("DELETE", 202, AAO, "Failed", "none", "bad-location"),
    # LROPatchInlineCompleteIgnoreHeaders
    Scenario("PATCH", 200, AAO, "Succeeded", "original-uri", "ignore-headers"),
    # LROPut200InlineCompleteNoState
    Scenario("PUT", 200, "none", "Succeeded", "original-uri", "no-state"),
    # LROPatch201WithAsyncHeader, LROPatch202WithAsyncAndLocationHeader, and their ends
    *(Scenario("PATCH", 201, AAO, s, "original-uri") for s in STATES),
    *(Scenario("PATCH", 202, BOTH, s, "original-uri") for s in STATES),
    Scenario("PATCH", 200, "none", "Succeeded", "original-uri"),
    # LROPutAsync*, LRODeleteAsync*, LROPostAsync*: the monitor's first answer is a 202
    Scenario("PUT", 200, BOTH, "Succeeded", "original-uri", "monitor-202"),
    Scenario("DELETE", 202, BOTH, "Canceled", "none", "monitor-202"),
    Scenario("POST", 202, BOTH, "Failed", "azure-async-operation", "monitor-202"),
    # LRORetry*: a 500 to the create (PUT and DELETE are resent) and to the first poll
    Scenario("PUT", 201, "none", "Succeeded", "original-uri", "retry-error"),
    Scenario("PUT", 201, BOTH, "Succeeded", "original-uri", "retry-error"),
    Scenario("DELETE", 202, "Location", "Succeeded", "none", "retry-error"),
    Scenario("DELETE", 202, BOTH, "Succeeded", "none", "retry-error"),
    Scenario("POST", 202, "Location", "Succeeded", "location", "poll-error"),
    Scenario("POST", 202, BOTH, "Succeeded", "azure-async-operation", "poll-error"),
    # LRONonRetry*Retry400: the monitor refuses with 400 and an error body: failed
    Scenario("PUT", 201, BOTH, "Failed", "original-uri", "monitor-400"),
    Scenario("DELETE", 202, AAO, "Failed", "none", "monitor-400"),
    Scenario("POST", 202, BOTH, "Failed", "azure-async-operation", "monitor-400"),
    # LROError*: a broken service is never read as a success; a monitor that answers 200
    # `{}` or JSON cut short stops for a person after max_refused_reads such answers
    *(
        Scenario(m, c, AAO, "Succeeded", f, "monitor-empty", expect="needs_human")
        for m, c, f in (("PUT", 201, "original-uri"), ("DELETE", 202, "none"))
    ),
    Scenario(
        "POST",
        202,
        BOTH,
        "Succeeded",
        "azure-async-operation",
        "monitor-invalid-json",
        expect="needs_human",
    ),
    Scenario(
        "PUT", 200, "none", "Succeeded", "original-uri", "create-invalid-json", expect="needs_human"
    ),
    Scenario("POST", 202, "none", "Succeeded", "location", "no-monitor", expect="needs_human"),
    Scenario(
        "DELETE", 202, "Location", "Succeeded", "none", "invalid-header", expect="needs_human"
    ),
    Scenario(
        "POST",
        202,
        BOTH,
        "Succeeded",
        "azure-async-operation",
        "invalid-header",
        expect="needs_human",
    ),
]


@pytest.fixture
async def service() -> AsyncIterator[AzureService]:
    async with azure_service() as azure:
        yield azure


def test_every_variant_is_in_the_table() -> None:
    """Each published shape has at least one row."""
    assert {s.variant for s in PUBLISHED} - {""} == set(VARIANTS)
    assert len({s.name for s in PUBLISHED}) == len(PUBLISHED)


async def test_every_published_azure_shape_ends_as_the_guidelines_say(
    service: AzureService, tmp_path: Path
) -> None:
    """Each published shape ends in its provisioning state's outcome with the result its
    final-state-via names; a done answer's monitor header is never called."""
    failures = await run_scenarios(service, PUBLISHED, tmp_path)
    assert not failures, "\n".join(failures)
    assert service.crashed == 0, "a done operation's monitor was called"
