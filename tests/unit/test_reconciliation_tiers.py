"""Reconciliation tiers, their one-sentence rules, the bounds of a scan, and the usage a
status answer reports: pure, from declared capabilities and answers (no network)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from jobtrail.core import outcomes as o
from jobtrail.core.model import Capabilities, ItemCounts, ResultSummary, Tier
from jobtrail.core.proof import tier_rule, token_outlived
from jobtrail.core.states import Evidence, RemoteStatus, State
from jobtrail.errors import InvalidInput, ProviderConfigError
from jobtrail.providers.file.config import find_provider_named, parse_provider
from jobtrail.providers.http.reading import read_usage
from jobtrail.providers.http.scanning import Page, moment, read_page
from jobtrail.services.census_actions import adoption_path

from factories import FULL, T0, make_op, step

DEADLINE = timedelta(minutes=10)


def test_the_tier_is_the_best_means_declared() -> None:
    """Own token first, then a filtered listing, then a scan, else none."""
    assert FULL.tier is Tier.TOKEN
    assert Capabilities(status_by_client_id=True).tier is Tier.TOKEN
    assert Capabilities(list_by_reference=True).tier is Tier.FILTER
    assert Capabilities(list_by_reference=True, scan_pages=3).tier is Tier.SCAN
    assert Capabilities().tier is Tier.NONE


@pytest.mark.parametrize(
    ("caps", "words"),
    [
        (replace(FULL, token_kept_for=3600.0), ["own token", "keeps the token 1h", "10m"]),
        (Capabilities(same_token_retry=True), ["documents no limit"]),
        (Capabilities(list_by_reference=True, absent_after=60.0), ["server-side filter", "1m"]),
        (
            Capabilities(list_by_reference=True, scan_pages=5, scan_seconds=20.0),
            ["at most 5 pages", "within 20s", "at the cap", "needs_human"],
        ),
        (Capabilities(), ["in doubt", "needs_human", "never resubmits"]),
    ],
)
def test_each_tier_is_one_sentence_with_its_limits(caps: Capabilities, words: list[str]) -> None:
    """The words `provider check` prints: the tier's name, then its limits, one sentence."""
    rule = tier_rule(caps, DEADLINE)
    assert all(word in rule for word in words), rule
    assert "." not in rule and "\n" not in rule


def _doc(**reconcile: Any) -> dict[str, Any]:
    doc = find_provider_named("openai-batch").document
    return {**doc, "reconcile": {**doc["reconcile"], **reconcile}}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"list": {"path": "/x", "pages": 2}}, "needs reconcile.list.match"),
        (
            {"list": {"path": "/x", "match": "m", "pages": 2}},
            "pages above 1 needs `next`",
        ),
        ({"list": {"path": "/x", "match": "m", "within": "5m"}}, "no longer than the call"),
        ({"list": {"path": "/x", "match": "m", "pages": 99}}, "from 1 to 50"),
        ({"token_kept": "1h"}, "token_kept needs reconcile.same_token"),
        (
            {"list": {"path": "/x", "match": "m", "offset": "o", "next": "n", "cursor": "c"}},
            "offset pages by position",
        ),
        ({"list": {"path": "/x", "match": "m", "total": "t"}}, "total counts items"),
    ],
)
def test_scan_and_token_mistakes_are_refused(change: dict[str, Any], message: str) -> None:
    """A scan's bounds and a token's window are checked when the file is read."""
    with pytest.raises(ProviderConfigError, match=message):
        parse_provider(_doc(**change))


def test_a_create_deadline_longer_than_the_tokens_memory_is_refused() -> None:
    """In the file, and at submit (token_outlived): retries must end while it remembers."""
    doc = find_provider_named("google-lro").document
    with pytest.raises(ProviderConfigError, match="longer than the provider keeps a token"):
        parse_provider({**doc, "deadlines": {"create": "2h"}})
    caps = Capabilities(same_token_retry=True, token_kept_for=3600.0)
    assert token_outlived(caps, timedelta(minutes=59)) is None
    assert "remembers a create token (1h)" in (token_outlived(caps, timedelta(hours=2)) or "")


def _page(items: list[dict[str, Any]], **more: Any) -> bytes:
    return json.dumps({"data": items, **more}).encode()


def test_a_page_says_its_cursor_and_how_far_back_it_reaches() -> None:
    """OpenAI's list: `last_id`, `has_more`, each batch's `created_at` (Unix seconds)."""
    spec = find_provider_named("openai-batch")
    assert spec.listing is not None
    ours = {"id": "batch_2", "created_at": 1_700_000_600, "metadata": {"jobtrail_ref": "op_1"}}
    other = {"id": "batch_1", "created_at": 1_700_000_000, "metadata": {}}
    body = _page([ours, other], last_id="batch_1", has_more=True)
    found, page = read_page(spec.listing, spec, 200, {}, body, "op_1")
    assert isinstance(found, o.Found) and found.job_ids == ("batch_2",)
    assert page == Page(cursor="batch_1", more=True, oldest=moment(1_700_000_000), count=2)
    assert page is not None and not page.last(spec.listing)
    submitted = datetime.fromtimestamp(1_700_000_600, UTC)
    assert page.reaches_back(submitted)  # a batch ten minutes older than the operation
    assert not page.reaches_back(submitted - timedelta(minutes=9))  # inside the margin


def test_a_page_paged_by_position_says_what_follows_until_the_total() -> None:
    """Airflow's census listing: `offset` the runs listed so far, until `total_entries`."""
    spec = find_provider_named("airflow")
    assert spec.census is not None
    listing = spec.census.listing
    runs = [{"dag_run_id": f"idem_{n:032d}", "dag_id": "d", "state": "running"} for n in (1, 2)]
    body = json.dumps({"dag_runs": runs, "total_entries": 3}).encode()
    found, page = read_page(listing, spec, 200, {}, body, "census#0")
    assert isinstance(found, o.Found) and found.job_ids == ()  # none is the reference's
    assert page is not None and (page.count, page.total) == (2, 3)
    assert not page.last(listing, 2) and page.following(listing, 2) == {"offset": "2"}
    assert page.last(listing, 3)
    empty = json.dumps({"dag_runs": [], "total_entries": 9}).encode()
    _, after = read_page(listing, spec, 200, {}, empty, "census#1")
    assert after is not None and after.last(listing, 2)  # an empty page ends it


def _census(**census: Any) -> dict[str, Any]:
    doc = find_provider_named("airflow").document
    return {**doc, "census": {**doc["census"], **census}}


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (_census(list={"path": "/x", "pages": 1}), "census.list.match must name"),
        (_census(list={"path": "/d/{dag_id}", "match": "m"}), "may hold no {placeholder}"),
        (_census(marker="reference"), 'marker = "reference" needs create.client_reference'),
        (_census(path_values={"dag": "dag_id"}), "census.path_values.dag: not a value"),
        (_census(path_values={"dag_id": ""}), "census.path_values.dag_id must be"),
        (_census(list={"path": "/x", "match": "m", "pages": 2}), "census.list.pages above 1"),
        (_census(marker="name"), "marker"),
        (
            {**_doc(), "census": {"marker": "token", "list": {"path": "/x", "match": "m"}}},
            'marker = "token" needs create.idempotency',
        ),
    ],
)
def test_census_listing_mistakes_are_refused(doc: dict[str, Any], message: str) -> None:
    """`[census]`: a listing of every job, our marker at `match`, path values that exist."""
    with pytest.raises(ProviderConfigError, match=re.escape(message)):
        parse_provider(doc)


def test_times_are_read_in_both_forms_providers_write() -> None:
    assert moment("2026-01-02T03:04:05.123Z") == datetime(2026, 1, 2, 3, 4, 5, 123000, UTC)
    assert moment(0) == datetime(1970, 1, 1, tzinfo=UTC)
    assert moment(True) is None and moment("yesterday") is None and moment(None) is None


def test_usage_is_read_as_numbers_only() -> None:
    """Numbers, and int64 written as text (proto3 JSON); anything else is left out."""
    paths = {"a": "u.a", "b": "u.b", "c": "u.c", "d": "u.d", "e": "missing"}
    document = {"u": {"a": 3, "b": "12", "c": True, "d": "lots"}}
    assert read_usage(paths, document) == {"a": 3, "b": 12}
    assert read_usage(paths, {}) is None and read_usage({}, document) is None


def test_a_capped_miss_stops_for_a_person_and_an_uncapped_one_looks_again() -> None:
    """A scan stopped at its cap proves nothing now or later: needs_human at once, with
    lookup_capped; a plain miss inside the window looks again."""
    lost = step(make_op(), o.Ambiguous(reason="lost", ref="at_1"), at=T0).operation
    capped = step(lost, o.Found(job_ids=(), capped="the scan stopped at its cap"), at=T0)
    assert capped.operation.state is State.NEEDS_HUMAN
    assert capped.transitions[-1].evidence is Evidence.LOOKUP_CAPPED
    assert capped.operation.next_poll_at is None
    miss = step(lost, o.Found(job_ids=()), at=T0).operation
    assert miss.state is State.RECONCILIATION and miss.next_poll_at is not None


def test_usage_is_kept_with_the_final_observation_only() -> None:
    """Running reads update the operation's usage; only the terminal read's observation
    keeps it (a run of running reads folds into one row)."""
    op = make_op(state=State.OBSERVING, remote_job_id="j1")
    running = o.Observed(
        remote_state="RUNNING", remote_status=RemoteStatus.RUNNING, usage={"requests": 1}
    )
    first = step(op, running, at=T0)
    assert first.operation.usage == {"requests": 1} and first.observations[0].usage is None
    done = o.Observed(
        remote_state="SUCCESS", remote_status=RemoteStatus.SUCCEEDED, usage={"requests": 3}
    )
    last = step(first.operation, done, at=T0)
    assert last.operation.usage == {"requests": 3} and last.observations[0].usage == {"requests": 3}


def test_a_result_collected_after_a_failure_is_partial_and_never_a_success() -> None:
    """The remote job ended failed with a partial result: collected, marked partial, and
    the operation ends failed."""
    op = make_op(
        state=State.RESULT_COLLECTING, remote_job_id="j1", remote_status=RemoteStatus.FAILED
    )
    summary = ResultSummary(
        valid=True, sha256="ab", size=2, items=ItemCounts(total=3, succeeded=1, failed=2)
    )
    done = step(op, o.ResultChecked(summary=summary), at=T0).operation
    assert done.state is State.FAILED and done.result is not None and done.result.partial


def _example(name: str) -> dict[str, Any]:
    import re
    import tomllib
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "providers.md").read_text()
    docs = [tomllib.loads(b) for b in re.findall(r"```toml\n(.*?)```", text, re.S)]
    return next(d for d in docs if d.get("name") == name)


def test_the_documented_examples_declare_what_the_page_says() -> None:
    """docs/providers.md's "Deadlines, reconciliation tiers" examples: a filtered listing
    with timeout_hours from the result deadline and counts; a token kept 24 h with a
    bounded scan and Cancel-After."""
    from jobtrail.core.remote_deadline import place

    hourly = parse_provider(_example("hourly-batches"))
    assert hourly.capabilities.tier is Tier.FILTER and hourly.capabilities.remote_deadline
    assert hourly.remote_deadline is not None
    placed = place(hourly.remote_deadline, {}, {}, hourly.deadlines["result"])
    assert placed.body == {"timeout_hours": 30}
    assert dict(hourly.usage) == {
        "requests": "total_requests",
        "succeeded_requests": "succeeded_requests",
    }
    scanned = parse_provider(_example("scanned-batches"))
    caps = scanned.capabilities
    assert caps.tier is Tier.TOKEN and caps.token_kept_for == 24 * 3600
    assert caps.scan_pages == 5 and caps.scan_seconds == 20
    assert scanned.remote_deadline is not None
    sent = place(scanned.remote_deadline, {}, {}, timedelta(hours=1))
    assert sent.headers == {"Cancel-After": "3600s"}


def test_an_adopted_job_takes_the_path_values_its_calls_need() -> None:
    """Airflow's status path needs `dag_id`, its result `task_id`: adopting without them is
    refused, naming the first; a provider whose calls need none takes none."""
    airflow = find_provider_named("airflow")
    with pytest.raises(InvalidInput, match=r"\{dag_id\} \(the census lists it"):
        adoption_path(airflow, None)
    with pytest.raises(InvalidInput, match=r"\{task_id\}: give it as --path task_id="):
        adoption_path(airflow, {"dag_id": "d"})
    with pytest.raises(InvalidInput, match="one URL path segment"):
        adoption_path(airflow, {"dag_id": "..", "task_id": "t"})
    assert adoption_path(airflow, {"dag_id": "d", "task_id": "t"}) == {
        "dag_id": "d",
        "task_id": "t",
    }
    assert adoption_path(find_provider_named("vertex-batch"), None) == {}  # {job_id} only
    with pytest.raises(InvalidInput, match="takes no path values"):
        adoption_path(find_provider_named("openai-batch"), {"a": "b"})
