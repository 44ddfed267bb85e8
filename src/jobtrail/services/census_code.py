"""A census of a code provider: its own listing (`list_jobs`, providers/code.py), paged
newest first, at most `max_requests` pages, each page a recorded call like a provider file's
listing request (its request as the provider describes it, its outcome, the answer's
metadata; redacted at the ledger's chokepoint). A refusal, an unanswered page or a throttle
(Retry-After included) stops the census there and says how far it got.

A provider whose marker is the idempotency token (Step Functions' execution name; a provider
file's `[census] marker = "token"`, Airflow's run id) names its
operation through the ledger: the tokens of this provider's operations are read, newest
first, within the same cap, and each listed token is put back as the operation id it
belongs to. A token no operation read holds stays a marker this ledger does not hold
(unknown here), never a second job.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from jobtrail.core import outcomes as o
from jobtrail.core.census import Listed, Reach
from jobtrail.core.redact import Redactor
from jobtrail.core.words import counted
from jobtrail.ledger import Ledger, OperationQuery
from jobtrail.providers.code.contract import CodeSpec, Listing, Marker
from jobtrail.providers.protocol import Provider

TOKENS_READ = 10_000  # the newest operations whose tokens a token-marked census reads


async def code_listing(
    ledger: Ledger,
    provider: Provider,
    spec: CodeSpec,
    cutoff: datetime | None,
    cap: int,
    calls: list[dict[str, Any]],
) -> tuple[list[Listed], Reach]:
    """Every job of the provider's own listing, newest first, until it ends, reaches jobs
    older than `cutoff`, or `cap` pages were asked for."""
    jobs: list[Listed] = []
    cursor: str | None = None
    stopped: str | None = None
    while True:
        page = await _page(provider, cursor)
        calls.append(call_record(dict(page.request), page.outcome, page.detail))
        stopped = stopped_by(page.outcome)
        if stopped is not None:
            break
        jobs += page.jobs
        older = cutoff is not None and any(j.created and j.created < cutoff for j in page.jobs)
        if page.cursor is None or older:
            return await _named(ledger, spec, jobs), Reach(
                requests=len(calls), listed=len(jobs), complete=True
            )
        if len(calls) >= cap:
            stopped = f"at the census's cap of {counted(cap, 'listing request')}"
            break
        cursor = page.cursor
    reach = Reach(requests=len(calls), listed=len(jobs), complete=False, stopped=stopped)
    return await _named(ledger, spec, jobs), reach


def code_redactor(spec: CodeSpec) -> Redactor:
    """What keeps a code provider's secrets out of a census's record: its sensitive names
    and the secret values it uses now."""
    return spec.redactor.extended(values=spec.secret_values())


def stopped_by(outcome: o.CallOutcome | None) -> str | None:
    """Why a listing answer stops the census, None when it names jobs."""
    if isinstance(outcome, o.Found):
        return None
    if isinstance(outcome, o.Throttled) and outcome.retry_after:
        return (
            f"the provider asked to wait (Retry-After {outcome.retry_after}): nothing more was "
            "sent; take the census again after that"
        )
    reason = getattr(outcome, "reason", "no answer")
    return f"a listing request was not answered with a listing ({reason})"


async def _page(provider: Provider, cursor: str | None) -> Listing:
    """One page; a plug-in that raises is a page not answered (its error in one line)."""
    try:
        page = await provider.list_jobs(cursor)  # type: ignore[attr-defined]
    except Exception as exc:  # foreign code: the census says what broke, and stops
        reason = f"list_jobs raised {type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}"
        return Listing(outcome=o.Rejected(reason=reason), detail={"error": reason})
    if not isinstance(page, Listing):
        reason = f"list_jobs returned a {type(page).__name__}, not a Listing"
        return Listing(outcome=o.Rejected(reason=reason), detail={"error": reason})
    return page


def call_record(
    request: dict[str, Any],
    outcome: o.CallOutcome | None,
    detail: Mapping[str, Any],
    operation_id: str | None = None,
) -> dict[str, Any]:
    """A listing request as its attempt records it, a provider file's or a code provider's:
    the request, the outcome, the answer's metadata (its body left out: a record per call,
    not a copy of the provider's list)."""
    return {
        "request": request,
        "for_operation": operation_id,
        "outcome": outcome.word if outcome is not None else None,
        "http_status": getattr(outcome, "http_status", None),
        "provider_request_id": getattr(outcome, "request_id", None),
        "detail": {k: v for k, v in detail.items() if k != "body"},
    }


async def _named(ledger: Ledger, spec: CodeSpec, jobs: list[Listed]) -> list[Listed]:
    """`jobs` with each token marker put back as the operation id holding that token."""
    if spec.census_marker is not Marker.TOKEN:
        return jobs
    return await named_by_token(ledger, spec.name, jobs)


async def named_by_token(ledger: Ledger, provider: str, jobs: list[Listed]) -> list[Listed]:
    """`jobs`, whose markers are idempotency tokens, with each put back as the operation id
    holding it (among `provider`'s newest TOKENS_READ operations)."""
    if not any(j.marker for j in jobs):
        return jobs
    query = OperationQuery(provider=provider, limit=TOKENS_READ)
    held = (await ledger.find_operations(query)).operations
    by_token = {op.idempotency_token: op.operation_id for op in held}
    return [replace(j, marker=by_token.get(j.marker, j.marker)) if j.marker else j for j in jobs]
