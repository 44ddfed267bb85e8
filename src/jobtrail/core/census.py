"""The census: a provider's jobs held against the ledger (DESIGN: looking from the provider's
side). Pure: what one listed job is to the ledger (`classify`), what a provider's listing lets
a census see (`sight`, `sight_rule`), and how far a listing cut short got (`Reach`).

A job is one of five: **followed** (the remote job of an operation, nothing to do), **ended
here, running there** (its operation ended while the provider still runs it: a cancel never
confirmed, `result_timed_out`, `needs_human`, `failed`, or a twin the operation knows of and
does not follow), **unknown here** (it carries our marker and no operation of this ledger
holds it: a ledger restored from an older backup, another ledger on the same account),
**a second job** (its marker names an operation that follows another job, which never saw
this one: the evidence of a duplicate, which must never happen) and **not ours** (no marker).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from jobtrail.core.local import seen_job_ids
from jobtrail.core.model import Capabilities, Operation, Tier
from jobtrail.core.proof import TIER_NAMES
from jobtrail.core.states import RemoteStatus
from jobtrail.core.words import counted, relative


class Category(StrEnum):
    FOLLOWED = "followed"
    ENDED_HERE = "ended_here"
    UNKNOWN_HERE = "unknown_here"
    SECOND_JOB = "second_job"
    NOT_OURS = "not_ours"

    @property
    def words(self) -> str:
        return _WORDS[self]


_WORDS = {
    Category.FOLLOWED: "followed",
    Category.ENDED_HERE: "ended here, running there",
    Category.UNKNOWN_HERE: "unknown here",
    Category.SECOND_JOB: "a second job",
    Category.NOT_OURS: "not ours",
}


@dataclass(frozen=True, kw_only=True)
class Listed:
    """One job as the provider's listing shows it: what was read, nothing judged."""

    job_id: str
    marker: str | None  # the operation id our marker names, None: no marker
    state: str | None  # the provider's word for the job
    status: RemoteStatus  # that word through the provider file's [states]
    created: datetime | None  # when the provider says it was created, if it says
    # values the provider file reads from the item for its paths (`[census] path_values`:
    # Airflow's `dag_id`), which a job adopted from the census needs
    path: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Finding:
    """A listed job, the category it falls in, and what jobtrail knows of it."""

    job: Listed
    category: Category
    operation_id: str | None  # the operation it belongs to (or its marker names)
    knows: str

    def line(self, now: datetime) -> str:
        """One line: job id, provider state, age, what jobtrail knows."""
        age = relative(self.job.created, now) if self.job.created else "age not listed"
        state = self.job.state or "no state listed"
        return f"{self.job.job_id}  {state}  {age}  {self.knows}"


def classify(job: Listed, *, holder: Operation | None, named: Operation | None) -> Finding:
    """What `job` is to the ledger. `holder`: the operation whose remote job it is (by job
    id); `named`: the operation its marker names (by operation id), either None when the
    ledger has none."""
    if holder is not None:
        return _by_state(job, holder, f"followed by {holder.operation_id} ({holder.state})")
    if job.marker is None:
        return Finding(job=job, category=Category.NOT_OURS, operation_id=None, knows="no marker")
    if named is None:
        return Finding(
            job=job,
            category=Category.UNKNOWN_HERE,
            operation_id=job.marker,
            knows=f"its marker names {job.marker}, which this ledger does not hold",
        )
    op_id = named.operation_id
    if job.job_id in seen_job_ids(named):
        # a job the provider tied to the operation (listed, answered, conflicting): known
        follows = named.remote_job_id or "no job yet"
        return _by_state(job, named, f"a twin {op_id} knows of ({named.state}, follows {follows})")
    if named.remote_job_id is None:
        # the operation has not named its job yet (a create in doubt): this is its job
        return _by_state(job, named, f"the job of {op_id} ({named.state}), not yet named there")
    return Finding(
        job=job,
        category=Category.SECOND_JOB,
        operation_id=op_id,
        knows=(
            f"DUPLICATE: its marker names {op_id}, which follows {named.remote_job_id} and "
            "never saw this job"
        ),
    )


def _by_state(job: Listed, op: Operation, knows: str) -> Finding:
    twin = op.remote_job_id is not None and job.job_id != op.remote_job_id
    running = not job.status.terminal  # running, or a word the file does not map
    if running and (twin or op.state.ends_automation):
        category = Category.ENDED_HERE
    else:
        category = Category.FOLLOWED
    return Finding(job=job, category=category, operation_id=op.operation_id, knows=knows)


def counts(findings: Iterable[Finding]) -> dict[Category, int]:
    """How many jobs fell in each category, every category named (zero included)."""
    seen = Counter(f.category for f in findings)
    return {c: seen.get(c, 0) for c in Category}


def summary(tally: dict[Category, int]) -> str:
    """The counts in one line, in the categories' order."""
    return "; ".join(f"{c.words}: {tally.get(c, 0)}" for c in Category)


class Sight(StrEnum):
    """What a census of a provider can list."""

    LISTING = "listing"  # every job of a listing, our marker read on each (a scan tier)
    PER_OPERATION = "per_operation"  # one lookup per operation the ledger holds
    NONE = "none"  # nothing: no listing jobtrail can read


def sight(caps: Capabilities, *, code: bool = False, listing: str | None = None) -> Sight:
    """What a census of a provider with these capabilities can list: the same listing
    reconciliation declares, per tier; a code provider's own listing (`listing`: what it
    sees, None when it has none)."""
    if listing:
        return Sight.LISTING
    if code:
        return Sight.NONE
    if caps.list_by_reference and caps.scan_pages is not None:
        return Sight.LISTING
    if caps.lookup:
        return Sight.PER_OPERATION
    return Sight.NONE


def sight_rule(caps: Capabilities, *, code: bool = False, listing: str | None = None) -> str:
    """What the census can see, in one sentence: the words `provider check` says beside
    "census sees" and `census` says before its findings (`listing`: what a code provider's
    own listing shows, or a provider file's `[census]` listing; None when it has none)."""
    if listing:
        cap = "the census's cap (--max-requests pages)" if code else "that cap"
        return (
            f"{listing}: followed, ended here, unknown here, a second job and not ours; a "
            f"listing cut short by {cap} says how far it got"
        )
    if code:
        return (
            "nothing: the code provider offers no listing of its jobs (no `list_jobs`), so "
            "jobs it runs for us that no operation follows stay unseen"
        )
    seen = sight(caps)
    if seen is Sight.LISTING:
        pages = caps.scan_pages or 1
        return (
            f"every job of the listing it scans for reconciliation ({TIER_NAMES[Tier.SCAN]}), "
            f"at most {counted(pages, 'page')} of the newest within {caps.scan_seconds or 0:g}s, "
            "our marker read on each: followed, ended here, unknown here, a second job and "
            "not ours; a listing cut short by that cap says how far it got"
        )
    if seen is Sight.PER_OPERATION and caps.list_by_reference:
        return (
            f"only the jobs of operations this ledger holds: the census asks "
            f"{TIER_NAMES[Tier.FILTER]} once per operation, so it finds what is followed, ended "
            "here or a second job, but never a job this ledger holds no operation for (unknown "
            "here: after a restore, compare with the provider's console)"
        )
    if seen is Sight.PER_OPERATION:
        return (
            "only the jobs of operations this ledger holds: the census asks the lookup by our "
            "key once per operation, so it finds what is followed or ended here (a key names "
            "one job: never a second job), but never a job this ledger holds no operation for "
            "(unknown here: after a restore, compare with the provider's console)"
        )
    return (
        "nothing: the provider offers no listing jobtrail can read (reconciliation tier: "
        f"{TIER_NAMES[caps.tier]}), so jobs it runs for us that no operation follows stay unseen"
    )


@dataclass(frozen=True, kw_only=True)
class Reach:
    """How far a census's listing went, and why it stopped where it did."""

    requests: int  # listing requests made
    listed: int  # jobs listed, before `since` is applied
    complete: bool  # the listing ended, or reached jobs older than `since`
    stopped: str | None = None  # why it stopped short, None when complete

    def words(self) -> str:
        if self.requests == 0 and not self.complete:
            return f"nothing was listed: {self.stopped}"
        done = f"{counted(self.requests, 'listing request')}, {counted(self.listed, 'job')} listed"
        if self.complete:
            return f"{done}: the whole listing asked for"
        return f"{done}: cut short, {self.stopped}; older jobs were not seen"
