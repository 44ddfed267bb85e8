"""Every `/lro/*` scenario of the REAL AutoRest test server (npm
`@microsoft.azure/autorest.testserver` 3.3.51, legacy/routes/lros.js: its `coverage`
keys, 81 of them; swagger/lro.json for each operation's method and final-state-via),
driven through jobtrail twice: by the shipped Azure profile that fits the operation, used
by name, and by the docs' ARM example for its method (tests/autorest_lro.py).

The expected end of each is what the reference Azure client asserts in autorest.python's
LRO acceptance test (packages/autorest.python/test/azure/legacy/AcceptanceTests/
test_lro.py; `test_lro_async.py` beside it for the one scenario test_lro.py does not
call): its return value, or that it raises. "The SDK returns X" is jobtrail `succeeded`
with X stored (re-read from the result store); "the SDK raises" is jobtrail not
succeeded, in the state the row names. `design` names each difference made on purpose.

Conformance (ending as the reference client does, of 81; the module prints it):

| run | on 3e5a834 (before) | now |
|---|---|---|
| shipped profiles, by name | 42 (33 as their row says) | 76 (81 as their row says) |
| docs' ARM examples | 39 (30 as their row says) | 76 (81 as their row says) |

The 5 others differ by design, each row says why: LRODeleteProvisioningFailed and
LRODeleteProvisioningCanceled (a Location monitor's final body says Failed/Canceled:
jobtrail ends so, the SDK returns the body), LRORetryErrorPost202Retry200Succeeded and
LRORetryErrorPostAsyncRetrySucceeded (a POST answered 500 is never re-sent: DESIGN rule 3,
`needs_human`), LROErrorPostNoLocation (a 202 naming no monitor is not done: `needs_human`).
The whole module takes about 10-35 s once the package is in `.cache/` (the first install,
about 20 s, is npm's).

Before, the docs had an ARM example for PUT only: the other methods ran the PUT example
with its method changed. The in-repo re-implementation of these routes that claimed 64 of
81 (tests/azure_lro.py) is retired: it tested itself, not the server.
"""

# ruff: noqa: E501 (the scenario table keeps one scenario to a row)
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from autorest_lro import RAISES, Ended, Row, docs_examples, docs_spec, profile_spec, run
from autorest_server import Server, listening_addresses, require_autorest, serving
from jobtrail.core.states import State

pytestmark = pytest.mark.slow

S, F, C, H = State.SUCCEEDED, State.FAILED, State.CANCELLED, State.NEEDS_HUMAN


def _p(state: str, id: str = "100", name: str = "foo") -> dict[str, Any]:
    return {"properties": {"provisioningState": state}, "id": id, "name": name}


FOO = _p("Succeeded")
SKU = {"name": "sku", "id": "100"}
SUB = {"properties": {"provisioningState": "Succeeded"}, "id": "100", "subresource": "sub1"}
DONE = {"status": "Succeeded"}
NO_MODEL = "returns None: swagger declares no model; jobtrail keeps the final answer's body"
RULE3 = (
    "a POST answered 500 may have been carried out: jobtrail never sends it again on its own "
    "(DESIGN rule 3) and stops for a person, where the SDK's RetryPolicy re-sends the POST"
)
STATE_IN_BODY = (
    "the Location monitor's final 200 says provisioningState {}: success needs positive "
    "evidence, so jobtrail ends as the body says, where the SDK returns the body"
)
R = Row

TABLE: list[Row] = [
    # -- LROs: done at create, or followed to the end ------------------------------------
    R(key="LROPutInlineComplete", method="PUT", route="/put/200/succeeded", sdk=FOO, end=S,
      asserts="test_happy_put200_succeeded: 'Succeeded' == process.provisioning_state"),
    R(key="LROPutInlineComplete201", method="PUT", route="/put/201/succeeded", sdk=FOO, end=S,
      asserts="test_put201_succeeded: provisioning_state Succeeded, id '100', name 'foo'"),
    R(key="LROPut200InlineCompleteNoState", method="PUT", route="/put/200/succeeded/nostate",
      sdk={"id": "100", "name": "foo"}, end=S,
      asserts="test_happy_put200_succeeded: '100' == process.id (no_state)"),
    R(key="LROPatchInlineCompleteIgnoreHeaders", method="PATCH",
      route="/patch/200/succeeded/ignoreheaders", sdk=FOO, end=S,
      asserts="test_lro_async.py test_lro_patch_200: 'Succeeded' == provisioning_state"),
    R(key="LROPatch201WithAsyncHeader", method="PATCH", route="/patch/201/retry/onlyAsyncHeader",
      sdk=_p("Succeeded", "/lro/patch/201/retry/onlyAsyncHeader"), end=S,
      asserts="test_patch201_retry_with_async_header: Succeeded, id, name"),
    R(key="LROPatch202WithAsyncAndLocationHeader", method="PATCH",
      route="/patch/202/retry/asyncAndLocationHeader",
      sdk=_p("Succeeded", "/lro/patch/202/retry/asyncAndLocationHeader"), end=S,
      asserts="test_patch202_retry_with_async_and_location_header: Succeeded, id, name"),
    R(key="LROPut202Retry200", method="PUT", route="/put/202/retry/200",
      sdk={"id": "100", "name": "foo"}, end=S,
      asserts="test_happy_put202_retry200: '100' == process.id"),
    R(key="LROPutSucceededWithBody", method="PUT", route="/put/201/creating/succeeded/200",
      sdk=FOO, end=S, asserts="test_happy_put201_creating_succeeded200: Succeeded"),
    R(key="LROPutSucceededNoBody", method="PUT", route="/put/200/updating/succeeded/200",
      sdk=FOO, end=S, asserts="test_happy_put200_updating_succeeded204: Succeeded"),
    R(key="LROPutFailed", method="PUT", route="/put/201/created/failed/200", sdk=RAISES, end=F,
      asserts="test_happy_put201_creating_failed200: raises 'failed'"),
    R(key="LROPutCanceled", method="PUT", route="/put/200/accepted/canceled/200", sdk=RAISES,
      end=C, asserts="test_happy_put200_acceptedcanceled200: raises 'canceled'"),
    R(key="LROPutAsyncRetrySucceeded", method="PUT", route="/putasync/retry/succeeded", sdk=FOO,
      end=S, asserts="test_happy_put_retry_succeeded: Succeeded"),
    R(key="LROPutAsyncNoRetrySucceeded", method="PUT", route="/putasync/noretry/succeeded",
      sdk=FOO, end=S, asserts="test_happy_put_retry_succeeded: Succeeded (no retry)"),
    R(key="LROPutAsyncRetryFailed", method="PUT", route="/putasync/retry/failed", sdk=RAISES,
      end=F, asserts="test_happy_put_retry_failed_canceled: raises 'failed'"),
    R(key="LROPutAsyncNoRetryCanceled", method="PUT", route="/putasync/noretry/canceled",
      sdk=RAISES, end=C, asserts="test_happy_put_retry_failed_canceled: raises 'canceled'"),
    R(key="LROPutNoHeaderInRetry", method="PUT", route="/put/noheader/202/200", sdk=FOO, end=S,
      asserts="test_happy_put_no_header_in_retry: Succeeded"),
    R(key="LROPutAsyncNoHeaderInRetry", method="PUT", route="/putasync/noheader/201/200",
      sdk=FOO, end=S, asserts="test_happy_put_no_header_in_retry: Succeeded (async)"),
    R(key="LROPutSubResourceInRetry", method="PUT", route="/putsubresource/202/200", sdk=SUB,
      end=S, asserts="test_happy_put_sub_resource: Succeeded"),
    R(key="LROPutSubResourceAsyncInRetry", method="PUT", route="/putsubresourceasync/202/200",
      sdk=SUB, end=S, asserts="test_happy_put_sub_resource: Succeeded (async)"),
    R(key="LROPutNonResourceInRetry", method="PUT", route="/putnonresource/202/200", sdk=SKU,
      end=S, asserts="test_happy_put_non_resource: '100' == process.id"),
    R(key="LROPutNonResourceAsyncInRetry", method="PUT", route="/putnonresourceasync/202/200",
      sdk=SKU, end=S, asserts="test_happy_put_non_resource: '100' == process.id (async)"),
    R(key="LRODeleteNoHeaderInRetry", method="DELETE", route="/delete/noheader", sdk=None,
      end=S, asserts="test_happy_delete_no_header_in_retry: is None"),
    R(key="LRODeleteAsyncNoHeaderInRetry", method="DELETE", route="/deleteasync/noheader/202/204",
      sdk=None, stored=DONE, end=S,
      asserts=f"test_happy_delete_no_header_in_retry: is None (async); {NO_MODEL}"),
    R(key="LRODeleteProvisioningSucceededWithBody", method="DELETE",
      route="/delete/provisioning/202/accepted/200/succeeded", sdk=FOO, end=S,
      asserts="test_happy_delete_provisioning: 'Succeeded' == process.provisioning_state"),
    R(key="LRODeleteProvisioningFailed", method="DELETE",
      route="/delete/provisioning/202/deleting/200/failed", sdk=_p("Failed"), end=F,
      asserts="test_happy_delete_provisioning: result.provisioning_state == 'Failed'",
      design=STATE_IN_BODY.format("Failed")),
    R(key="LRODeleteProvisioningCanceled", method="DELETE",
      route="/delete/provisioning/202/deleting/200/canceled", sdk=_p("Canceled"), end=C,
      asserts="test_happy_delete_provisioning: result.provisioning_state == 'Canceled'",
      design=STATE_IN_BODY.format("Canceled")),
    R(key="LRODeleteInlineComplete", method="DELETE", route="/delete/204/succeeded", sdk=None,
      end=S, asserts="test_happy_delete: delete204_succeeded is None"),
    R(key="LRODelete200", method="DELETE", route="/delete/202/retry/200", sdk=None, end=S,
      asserts="test_happy_delete: delete202_retry200 is None"),
    R(key="LRODelete204", method="DELETE", route="/delete/202/noretry/204", sdk=None, end=S,
      asserts="test_happy_delete: delete202_no_retry204 is None"),
    R(key="LRODeleteAsyncRetrySucceeded", method="DELETE", route="/deleteasync/retry/succeeded",
      sdk=None, stored=DONE, end=S, asserts=f"test_happy_delete_async_succeeded: {NO_MODEL}"),
    R(key="LRODeleteAsyncNoRetrySucceeded", method="DELETE",
      route="/deleteasync/noretry/succeeded", sdk=None, stored=DONE, end=S,
      asserts=f"test_happy_delete_async_succeeded (no retry): {NO_MODEL}"),
    R(key="LRODeleteAsyncRetryFailed", method="DELETE", route="/deleteasync/retry/failed",
      sdk=RAISES, end=F, asserts="test_happy_delete_async_retry_failed_canceled: 'failed'"),
    R(key="LRODeleteAsyncRetryCanceled", method="DELETE", route="/deleteasync/retry/canceled",
      sdk=RAISES, end=C, asserts="test_happy_delete_async_retry_failed_canceled: 'canceled'"),
    R(key="LROPostSuccededWithBody", method="POST", route="/post/202/retry/200", sdk=None,
      stored=FOO, end=S, asserts=f"test_post202_retry200: {NO_MODEL}"),
    R(key="LROPostSuccededNoBody", method="POST", route="/post/202/noretry/204", sdk=None, end=S,
      asserts="test_happy_post: post202_no_retry204 is None (the final 204 has no body)"),
    R(key="LROPost200", method="POST", route="/post/payload/200",
      sdk={"id": "1", "name": "product"}, end=S, asserts="test_happy_post: sku.id == '1'"),
    R(key="LROPostDoubleHeadersFinalAzureHeaderGet", method="POST",
      route="/LROPostDoubleHeadersFinalAzureHeaderGet", sdk={"status": "succeeded", "id": "100"},
      end=S, final="azure-async-operation",
      asserts="test_post_double_headers_final: product.id == '100' (the monitor's answer)"),
    R(key="LROPostDoubleHeadersFinalAzureHeaderGetDefault", method="POST",
      route="/LROPostDoubleHeadersFinalAzureHeaderGetDefault", sdk={"id": "100", "name": "foo"},
      end=S, asserts="test_post_double_headers_default: product.id == '100' (GET Location)"),
    R(key="LROPostAndGetList", method="POST", route="/list", sdk=[{"id": "100", "name": "foo"}],
      end=S, asserts="test_lro_list: one product, id '100', name 'foo'"),
    R(key="LROPostAsyncRetrySucceeded", method="POST", route="/postasync/retry/succeeded",
      sdk=FOO, end=S, asserts="test_happy_post_async_succeeded: prod.id == '100'"),
    R(key="LROPostAsyncNoRetrySucceeded", method="POST", route="/postasync/noretry/succeeded",
      sdk=FOO, end=S, asserts="test_happy_post_async_succeeded: prod.id == '100' (no retry)"),
    R(key="LROPostAsyncRetryFailed", method="POST", route="/postasync/retry/failed", sdk=RAISES,
      end=F, asserts="test_happy_post_async_retry_failed_canceled: 'Internal Server Error'"),
    R(key="LROPostAsyncRetryCanceled", method="POST", route="/postasync/retry/canceled",
      sdk=RAISES, end=C, asserts="test_happy_post_async_retry_failed_canceled: 'canceled'"),
    # -- custom headers: every call carries the x-ms-client-request-id it was given -------
    R(key="CustomHeaderPutAsyncSucceded", method="PUT", route="/customheader/putasync/retry/succeeded",
      sdk=FOO, end=S, custom_header=True,
      asserts="test_custom_headers_put_async_retry_succeeded: process is not None"),
    R(key="CustomHeaderPostAsyncSucceded", method="POST",
      route="/customheader/postasync/retry/succeeded", sdk=None, stored=DONE, end=S,
      custom_header=True, asserts=f"test_custom_headers_post_async_retry_succeeded: {NO_MODEL}"),
    R(key="CustomHeaderPutSucceeded", method="PUT",
      route="/customheader/put/201/creating/succeeded/200", sdk=FOO, end=S, custom_header=True,
      asserts="test_custom_headers_put201_creating_succeeded200: process is not None"),
    R(key="CustomHeaderPostSucceeded", method="POST", route="/customheader/post/202/retry/200",
      sdk=None, end=S, custom_header=True,
      asserts="test_custom_headers_post202_retry200: is None (the final 200 has no body)"),
    # -- LRORetrys: transient 500s ----------------------------------------------------
    R(key="LRORetryPutSucceededWithBody", method="PUT",
      route="/retryerror/put/201/creating/succeeded/200", sdk=FOO, end=S,
      asserts="test_retrys_put: Succeeded"),
    R(key="LRORetryErrorPutAsyncSucceeded", method="PUT", route="/retryerror/putasync/retry/succeeded",
      sdk=FOO, end=S, asserts="test_retrys_put: Succeeded (async, the final GET)"),
    R(key="LRORetryErrorPutAsyncSucceededPolling", method="PUT",
      route="/retryerror/putasync/retry/succeeded", sdk=FOO, end=S,
      asserts="test_retrys_put: Succeeded (async, the monitor)"),
    R(key="LRORetryErrorDelete202Accepted200Succeeded", method="DELETE",
      route="/retryerror/delete/provisioning/202/accepted/200/succeeded", sdk=FOO, end=S,
      asserts="test_retrys_delete: 'Succeeded' == process.provisioning_state"),
    R(key="LRORetryErrorDelete202Retry200Succeeded", method="DELETE",
      route="/retryerror/delete/202/retry/200", sdk=None, stored=FOO, end=S,
      asserts=f"test_retrys_delete: delete202_retry200 {NO_MODEL}"),
    R(key="LRORetryErrorDeleteAsyncRetrySucceeded", method="DELETE",
      route="/retryerror/deleteasync/retry/succeeded", sdk=None, stored=DONE, end=S,
      asserts=f"test_retrys_delete: delete_async_relative_retry_succeeded {NO_MODEL}"),
    R(key="LRORetryErrorPost202Retry200Succeeded", method="POST",
      route="/retryerror/post/202/retry/200", sdk=None, end=H, design=RULE3,
      asserts="test_retrys_post: post202_retry200 is None"),
    R(key="LRORetryErrorPostAsyncRetrySucceeded", method="POST",
      route="/retryerror/postasync/retry/succeeded", sdk=None, end=H, design=RULE3,
      asserts="test_retrys_post: post_async_relative_retry_succeeded is None"),
    # -- LROSADs: refused at create or by the monitor ---------------------------------
    R(key="LRONonRetryPut400", method="PUT", route="/nonretryerror/put/400", sdk=RAISES, end=F,
      asserts="test_sads_put_non_retry: raises 'Bad Request'"),
    R(key="LRONonRetryPut201Creating400", method="PUT", route="/nonretryerror/put/201/creating/400",
      sdk=RAISES, end=F, asserts="test_sads_put_non_retry: raises 'Error from the server'"),
    R(key="LRONonRetryPut201Creating400InvalidJson", method="PUT",
      route="/nonretryerror/put/201/creating/400/invalidjson", sdk=RAISES, end=F,
      asserts="test_sads_put_non_retry201_creating400_invalid_json_with_exception: raises"),
    R(key="LRONonRetryPutAsyncRetry400", method="PUT", route="/nonretryerror/putasync/retry/400",
      sdk=RAISES, end=F, asserts="test_sads_put_async_relative: raises 'Bad Request'"),
    R(key="LRONonRetryDelete400", method="DELETE", route="/nonretryerror/delete/400", sdk=RAISES,
      end=F, asserts="tests_lro_sads_delete_non_retry: raises 'Bad Request'"),
    R(key="LRONonRetryDelete202Retry400", method="DELETE", route="/nonretryerror/delete/202/retry/400",
      sdk=RAISES, end=F, asserts="tests_lro_sads_delete_non_retry: raises 'Bad Request' (202)"),
    R(key="LRONonRetryDeleteAsyncRetry400", method="DELETE",
      route="/nonretryerror/deleteasync/retry/400", sdk=RAISES, end=F,
      asserts="test_sads_delete_async_relative: raises 'Bad Request'"),
    R(key="LRONonRetryPost400", method="POST", route="/nonretryerror/post/400", sdk=RAISES, end=F,
      asserts="test_sads_post_non_retry: raises 'Bad Request'"),
    R(key="LRONonRetryPost202Retry400", method="POST", route="/nonretryerror/post/202/retry/400",
      sdk=RAISES, end=F, asserts="test_sads_post_non_retry: raises 'Bad Request' (202)"),
    R(key="LRONonRetryPostAsyncRetry400", method="POST", route="/nonretryerror/postasync/retry/400",
      sdk=RAISES, end=F, asserts="test_sads_post_async_relative: raises 'Bad Request'"),
    # -- LROSADs: a broken service is never read as a success -------------------------
    R(key="LROErrorPut201NoProvisioningStatePayload", method="PUT",
      route="/error/put/201/noprovisioningstatepayload", sdk=RAISES, end=H,
      asserts="test_sads_put_error201_no_provisioning_state_payload: raises 'does not contain a body'"),
    R(key="LROErrorPutAsyncNoPollingStatus", method="PUT", route="/error/putasync/retry/nostatus",
      sdk=RAISES, end=H, asserts="test_sads_put_async_relative: raises 'no status found in body'"),
    R(key="LROErrorPutAsyncNoPollingStatusPayload", method="PUT",
      route="/error/putasync/retry/nostatuspayload", sdk=RAISES, end=H,
      asserts="test_sads_put_async_relative: raises 'does not contain a body'"),
    R(key="LROErrorPut200InvalidJson", method="PUT", route="/error/put/200/invalidjson",
      sdk=RAISES, end=H, asserts="test_sads_put200_invalid_json_with_exception: DecodeError"),
    R(key="LROErrorPutAsyncInvalidHeader", method="PUT", route="/error/putasync/retry/invalidheader",
      sdk=RAISES, end=H, asserts="test_sads_put_async_relative_with_exception: raises"),
    R(key="LROErrorPutAsyncInvalidJsonPolling", method="PUT",
      route="/error/putasync/retry/invalidjsonpolling", sdk=RAISES, end=H,
      asserts="test_sads_put_async_relative_with_exception: DecodeError"),
    R(key="LROErrorDeleteNoLocation", method="DELETE", route="/error/delete/204/nolocation",
      sdk=None, end=S, asserts="test_sads_delete204_succeeded: returns (None)"),
    R(key="LROErrorDelete202RetryInvalidHeader", method="DELETE",
      route="/error/delete/202/retry/invalidheader", sdk=RAISES, end=H,
      asserts="test_sads_delete202_retry_invalid_header_with_exception: raises"),
    R(key="LROErrorDeleteAsyncNoPollingStatus", method="DELETE",
      route="/error/deleteasync/retry/nostatus", sdk=RAISES, end=H,
      asserts="test_sads_delete_async_relative: raises 'no status found in body'"),
    R(key="LROErrorDeleteAsyncInvalidHeader", method="DELETE",
      route="/error/deleteasync/retry/invalidheader", sdk=RAISES, end=H,
      asserts="test_sads_delete_async_relative_with_exception: raises"),
    R(key="LROErrorDeleteAsyncInvalidJsonPolling", method="DELETE",
      route="/error/deleteasync/retry/invalidjsonpolling", sdk=RAISES, end=H,
      asserts="test_sads_delete_async_relative_with_exception: DecodeError"),
    R(key="LROErrorPostNoLocation", method="POST", route="/error/post/202/nolocation", sdk=None,
      end=H, asserts="test_sads_post202_no_location: process is None",
      design="a 202 names no monitor: accepted is not done, and nothing can show the action "
      "finished, so jobtrail stops for a person where the SDK reads any 2xx as done"),
    R(key="LROErrorPost202RetryInvalidHeader", method="POST",
      route="/error/post/202/retry/invalidheader", sdk=RAISES, end=H,
      asserts="test_post202_retry_invalid_header_with_exception: raises"),
    R(key="LROErrorPostAsyncNoPollingPayload", method="POST",
      route="/error/postasync/retry/nopayload", sdk=RAISES, end=H,
      asserts="test_sads_post_async_relative: raises 'does not contain a body'"),
    R(key="LROErrorPostAsyncInvalidHeader", method="POST",
      route="/error/postasync/retry/invalidheader", sdk=RAISES, end=H,
      asserts="test_sads_post_async_relative_with_exception: raises"),
    R(key="LROErrorPostAsyncInvalidJsonPolling", method="POST",
      route="/error/postasync/retry/invalidjsonpolling", sdk=RAISES, end=H,
      asserts="test_sads_post_async_relative_with_exception: DecodeError"),
]  # fmt: skip
ROWS = {row.key: row for row in TABLE}


@pytest.fixture(scope="session")
def autorest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    require_autorest()
    with serving(tmp_path_factory.mktemp("autorest")) as server:
        yield server


def _coverage_keys(server: Server) -> set[str]:
    text = (server.package / "legacy" / "routes" / "lros.js").read_text(encoding="utf-8")
    return set(re.findall(r'(?:optionalC|c)overage\["(\w+)"\] = 0', text))


def _swagger(server: Server) -> dict[str, dict[str, Any]]:
    text = (server.package / "swagger" / "lro.json").read_text(encoding="utf-8-sig")
    return dict(json.loads(text)["paths"])


def test_the_server_listens_on_loopback_only(autorest: Server) -> None:
    """The server the tests start is bound to 127.0.0.1 and nothing else."""
    assert listening_addresses(autorest.port) == {"0100007F"}


def test_the_table_is_every_lros_scenario(autorest: Server) -> None:
    """One row per lros.js coverage key, each with its swagger operation's method and
    final-state-via."""
    assert len(TABLE) == len(ROWS) == 81
    assert set(ROWS) == _coverage_keys(autorest)
    paths = _swagger(autorest)
    for row in TABLE:
        operations = paths["/lro" + row.route]
        assert row.method.lower() in operations, row.key
        options = operations[row.method.lower()].get("x-ms-long-running-operation-options", {})
        assert row.final == options.get("final-state-via", ""), row.key


def _report(kind: str, ended: dict[str, Ended]) -> list[str]:
    """Print the conformance count; return the rows that did not end as their row says."""
    same = sum(ended[row.key].matches_sdk(row) for row in TABLE)
    by_design = [row.key for row in TABLE if row.design]
    print(f"\n{kind}: {same} of {len(TABLE)} end as the reference client does;")
    print(f"  {len(by_design)} differ by design: {', '.join(by_design)}")
    problems = []
    for row in TABLE:
        got = ended[row.key]
        if not got.as_expected(row):
            want = f"{row.end.value}" + (f" {row.expected_result!r}" if row.end is S else "")
            problems.append(
                f"{row.key} [{row.method} {row.route}]: {got.state} {got.result!r} "
                f"({got.reason}); expected {want} — {row.asserts}"
            )
    return problems


async def test_every_scenario_through_the_shipped_profiles(
    autorest: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each scenario, through the shipped profile that fits it used by name, ends as the
    reference client does (or as its row's design note says)."""
    monkeypatch.setenv("AZURE_ACCESS_TOKEN", "test-token")
    specs = [(row, profile_spec(row, autorest.origin, monkeypatch)) for row in TABLE]
    problems = _report("profile", await run(specs, tmp_path))
    assert not problems, "\n".join(problems)


async def test_every_scenario_through_the_docs_examples(
    autorest: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each scenario, through the docs' ARM example for its method (read out of
    docs/providers.md), ends as the reference client does (or as its design note says)."""
    monkeypatch.setenv("AZURE_TOKEN", "test-token")
    monkeypatch.setenv("AZURE_ACCESS_TOKEN", "test-token")
    examples = docs_examples()
    specs = [(row, docs_spec(row, autorest.origin, examples)) for row in TABLE]
    problems = _report("docs", await run(specs, tmp_path))
    assert not problems, "\n".join(problems)


async def test_five_unreadable_reads_stop_an_operation_in_about_a_minute(
    autorest: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the default [poll] (the docs' ARM example declares none), a monitor that only
    answers `{}` stops the operation for a person after five reads, 2, 4, 8, 16 and 32 s
    apart with ±20 % jitter: about a minute, as docs/guarantees/leases.md says (virtual clock)."""
    monkeypatch.setenv("AZURE_TOKEN", "test-token")
    row = ROWS["LROErrorPutAsyncNoPollingStatus"]
    examples = docs_examples()
    runs = [(row, docs_spec(row, autorest.origin, examples))]
    for attempt in range(3):
        ended = (await run(runs, tmp_path / str(attempt)))[row.key]
        assert ended.state is State.NEEDS_HUMAN, ended
        assert 0.8 * 62 <= ended.took <= 1.2 * 62, ended.took
