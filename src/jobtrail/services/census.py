"""Taking a census of a provider's jobs (core/census.py judges each; providers/census.py
makes the calls): list through the listing reconciliation declares, hold each job against
the ledger, record who took it, what was asked and what was found.

A listing to scan is paged through as reconciliation pages it, within the same caps (`pages`,
`within`); a listing the provider filters on one reference, or a lookup by our key, is asked
once per operation the ledger holds, at most `max_requests` times. A refusal, an unreadable
answer or a Retry-After stops the census where it is: it says how far it got, and sends
nothing sooner than the provider asked.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

from yarl import URL

from jobtrail.core.census import (
    Category,
    Finding,
    Listed,
    Reach,
    Sight,
    classify,
    counts,
    sight,
    sight_rule,
)
from jobtrail.core.model import Operation
from jobtrail.core.notices import census_notice
from jobtrail.core.redact import Redactor
from jobtrail.core.states import State
from jobtrail.core.words import counted, iso
from jobtrail.ledger import Ledger, OperationQuery
from jobtrail.providers.census import Lister
from jobtrail.providers.code.contract import CodeSpec
from jobtrail.providers.file.spec import ProviderSpec
from jobtrail.providers.http.scanning import Page
from jobtrail.providers.registry import ProviderRegistry
from jobtrail.services.census_code import (
    call_record,
    code_listing,
    code_redactor,
    named_by_token,
    stopped_by,
)

MAX_REQUESTS = 500  # per-operation lookups a census makes at most (`--max-requests`)


@dataclass(frozen=True, kw_only=True)
class Census:
    """What one census found."""

    provider: str
    actor: str
    taken_at: datetime
    since: datetime | None
    sight: Sight
    sees: str  # what this provider's census can see, in one sentence
    reach: Reach
    findings: tuple[Finding, ...]

    @property
    def tally(self) -> dict[Category, int]:
        return counts(self.findings)

    def of(self, category: Category) -> list[Finding]:
        return [f for f in self.findings if f.category is category]


# The findings a person is told of (docs/dashboard.md, "Notices to people"): each raises one
# notice, once per job and kind, however many censuses find it again.
TOLD = frozenset({Category.ENDED_HERE, Category.UNKNOWN_HERE, Category.SECOND_JOB})


async def take_census(
    ledger: Ledger,
    registry: ProviderRegistry,
    spec: ProviderSpec | CodeSpec,
    *,
    actor: str,
    since: timedelta | None = None,
    max_requests: int = MAX_REQUESTS,
) -> Census:
    """List `spec`'s jobs (created within `since`, when given), hold each against the
    ledger, and record the census in the audit log."""
    now = ledger.now()
    cutoff = now - since if since is not None else None
    calls: list[dict[str, Any]] = []
    if isinstance(spec, CodeSpec):
        seen = sight(spec.capabilities, code=True, listing=spec.census)
        sees = sight_rule(spec.capabilities, code=True, listing=spec.census)
        redactor = code_redactor(spec)
        if seen is Sight.LISTING:
            provider = registry.code_provider(spec)
            jobs, reach = await code_listing(ledger, provider, spec, cutoff, max_requests, calls)
        else:
            why = "the code provider offers no listing of its jobs"
            jobs, reach = [], Reach(requests=0, listed=0, complete=False, stopped=why)
    else:
        words = spec.census.sees() if spec.census else None
        seen = sight(spec.capabilities, listing=words)
        sees = sight_rule(spec.capabilities, listing=words)
        jobs, reach, redactor = await _file_census(
            ledger, registry, spec, cutoff, max_requests, calls
        )
    unique = list({j.job_id: j for j in jobs if _since(j, cutoff)}.values())
    findings = tuple([await _held(ledger, spec.name, job) for job in unique])
    census = Census(
        provider=spec.name,
        actor=actor,
        taken_at=now,
        since=cutoff,
        sight=seen,
        sees=sees,
        reach=reach,
        findings=findings,
    )
    entries = [("census.call", call) for call in calls] + [("census.taken", _taken(census))]
    await ledger.record_census(actor, entries, redactor)
    for finding in findings:
        if finding.category in TOLD:  # a person decides: adopt or cancel (issue 34)
            notice = census_notice(
                provider=spec.name, remote_job_id=finding.job.job_id,
                finding=finding.category.value, at=now,
                summary=f"The census of {spec.name} found job {finding.job.job_id}: "
                f"{finding.category.words} ({finding.knows}). Adopt it or cancel it.",
                operation_id=finding.operation_id, remote_state=finding.job.state,
            )  # fmt: skip
            await ledger.raise_notice(notice, redactor)
    return census


async def _file_census(
    ledger: Ledger,
    registry: ProviderRegistry,
    spec: ProviderSpec,
    cutoff: datetime | None,
    max_requests: int,
    calls: list[dict[str, Any]],
) -> tuple[list[Listed], Reach, Redactor]:
    """A provider file's census: the listing its reconciliation declares, per tier."""
    lister = Lister(spec, registry.session())
    seen = sight(spec.capabilities, listing=spec.census.sees() if spec.census else None)
    if seen is Sight.LISTING:
        jobs, reach = await _scan(lister, cutoff, calls)
        if spec.census is not None and spec.census.token:
            jobs = await named_by_token(ledger, spec.name, jobs)
    elif seen is Sight.PER_OPERATION:
        jobs, reach = await _per_operation(ledger, lister, spec, cutoff, max_requests, calls)
    else:
        why = "the provider offers no listing jobtrail can read"
        jobs, reach = [], Reach(requests=0, listed=0, complete=False, stopped=why)
    return jobs, reach, lister.redactor_now()


def _since(job: Listed, cutoff: datetime | None) -> bool:
    return cutoff is None or job.created is None or job.created >= cutoff


async def _held(ledger: Ledger, provider: str, job: Listed) -> Finding:
    holder = await ledger.find_by_remote_job(provider, job.job_id)
    named = await ledger.find(job.marker) if job.marker else None
    if named is not None and named.operation_id != job.marker:
        named = None  # a key that happens to equal the marker names no operation of ours
    return classify(job, holder=holder, named=named)


async def _scan(
    lister: Lister, cutoff: datetime | None, calls: list[dict[str, Any]]
) -> tuple[list[Listed], Reach]:
    """The listing paged through, newest first, within its caps (reconciliation's, or the
    census's own listing's)."""
    listing = lister.spec.listing
    first = lister.first_url()
    assert listing is not None
    if first is None:
        why = "the listing's path names one operation: nothing lists every job"
        return [], Reach(requests=0, listed=0, complete=False, stopped=why)
    started, url = time.monotonic(), first
    jobs: list[Listed] = []
    stopped: str | None = None
    listed = 0  # the items of the pages read, ours or not
    while True:
        reply, items = await lister.listed(url, f"census#{len(calls)}", None)
        calls.append(call_record(lister.described(url), reply.outcome, reply.detail))
        stopped = stopped_by(reply.outcome)
        if stopped is not None:
            break
        jobs += items
        page = Page.from_json(reply.detail.get("page") or {})
        listed += page.count
        if page.last(listing, listed) or (cutoff and page.oldest and page.oldest < cutoff):
            return jobs, Reach(requests=len(calls), listed=len(jobs), complete=True)
        following = page.following(listing, listed)
        if len(calls) >= listing.pages:
            stopped = f"at the listing's cap of {listing.pages} page(s)"
        elif time.monotonic() - started >= listing.within.total_seconds():
            stopped = f"at the listing's cap of {listing.within.total_seconds():g}s"
        elif following is None:
            stopped = "the listing names no next page"
        if stopped is not None or following is None:
            break
        url = str(URL(first).update_query(following))
    return jobs, Reach(requests=len(calls), listed=len(jobs), complete=False, stopped=stopped)


async def _per_operation(
    ledger: Ledger,
    lister: Lister,
    spec: ProviderSpec,
    cutoff: datetime | None,
    cap: int,
    calls: list[dict[str, Any]],
) -> tuple[list[Listed], Reach]:
    """One lookup per operation of this provider (created since `cutoff`), newest first."""
    query = OperationQuery(provider=spec.name, created_from=cutoff, limit=cap)
    page = await ledger.find_operations(query)
    jobs: list[Listed] = []
    asked = [op for op in page.operations if _may_have_a_job(op)]
    for op in asked:
        url = lister.url_for(op)
        if url is None:
            continue
        reply, items = await lister.listed(url, f"census#{op.operation_id}", op.operation_id)
        described = lister.described(url)
        calls.append(call_record(described, reply.outcome, reply.detail, op.operation_id))
        stopped = stopped_by(reply.outcome)
        if stopped is not None:
            return jobs, Reach(
                requests=len(calls), listed=len(jobs), complete=False, stopped=stopped
            )
        jobs += items
    if page.total > len(page.operations):
        left = counted(page.total - len(page.operations), "older operation")
        stopped = f"at the census's cap of {cap} lookups: {left} not asked about"
        return jobs, Reach(requests=len(calls), listed=len(jobs), complete=False, stopped=stopped)
    return jobs, Reach(requests=len(calls), listed=len(jobs), complete=True)


def _may_have_a_job(op: Operation) -> bool:
    """An operation whose create may have reached the provider: one never sent has no job,
    but one whose create intent is recorded with no outcome (a worker that died right after
    sending) may have one."""
    never_sent = op.create_attempts == 0 and op.inflight_attempt is None
    return not (op.state is State.CREATE_PENDING and never_sent)


def _taken(census: Census) -> dict[str, Any]:
    """What the audit log keeps of a census: its counts, and each job of ours."""
    return {
        "provider": census.provider,
        "since": census.since.isoformat() if census.since else None,
        "sight": census.sight.value,
        "reach": asdict(census.reach),
        "counts": {c.value: n for c, n in census.tally.items()},
        "jobs": [
            {
                "job_id": f.job.job_id,
                "category": f.category.value,
                "operation_id": f.operation_id,
                "state": f.job.state,
            }
            for f in census.findings
            if f.category is not Category.NOT_OURS
        ],
    }


def census_json(census: Census, now: datetime) -> dict[str, Any]:
    """A census as surfaces show it: what it can see, how far it got, its counts, and one
    entry (with its one line) per job."""
    return {
        "provider": census.provider,
        "actor": census.actor,
        "taken_at": iso(census.taken_at),
        "since": iso(census.since),
        "sight": census.sight.value,
        "sees": census.sees,
        "reach": asdict(census.reach) | {"words": census.reach.words()},
        "counts": {c.value: n for c, n in census.tally.items()},
        "jobs": [
            {
                "job_id": f.job.job_id,
                "category": f.category.value,
                "category_words": f.category.words,
                "operation_id": f.operation_id,
                "marker": f.job.marker,
                "path": dict(f.job.path),
                "state": f.job.state,
                "remote_status": f.job.status.value,
                "created_at": iso(f.job.created),
                "knows": f.knows,
                "line": f.line(now),
            }
            for f in census.findings
        ],
    }
