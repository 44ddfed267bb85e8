"""Reading the answer to a lookup by client reference: `[reconcile] lookup` (one job by a key
of ours) and `[reconcile] list` (a listing of jobs). Pure functions of (status, headers,
body), like parse.py.

A lookup GETs the job by a key of ours in its path: Airflow's DAG run, whose id is the
idempotency token jobtrail chose. A 2xx answer names the job; a declared `absent` code
(404) says no job holds that key, which proves that a lost create made nothing; anything
else proves nothing either way.
"""

from __future__ import annotations

from collections.abc import Mapping

from jobtrail.core import outcomes as o
from jobtrail.core.lookup import MISSING, find
from jobtrail.core.model import AttemptKind
from jobtrail.providers.file.spec import ListSpec, LookupSpec, ProviderSpec, SourceKind
from jobtrail.providers.http import parse


def parse_lookup(
    lookup: LookupSpec, spec: ProviderSpec, status: int, headers: Mapping[str, str], body: bytes
) -> o.CallOutcome:
    req = parse.request_id(spec, headers)
    if status in lookup.absent:
        return o.Found(job_ids=(), http_status=status, request_id=req)
    if not 200 <= status < 300:
        return parse.error_outcome(AttemptKind.RECONCILE, status, headers, body, req)
    document, problem = parse.read_json(body)
    if problem is not None:
        return o.Ambiguous(reason=f"lookup {problem}", http_status=status, request_id=req)
    names = any(source.kind is SourceKind.NAME for source in spec.identity)
    job_id, problem = parse.job_id_at(document, lookup.job_id, slashes=names)
    if job_id is None:
        return o.Ambiguous(
            reason=f"the lookup answer is unreadable: {problem}", http_status=status, request_id=req
        )
    return o.Found(job_ids=(job_id,), http_status=status, request_id=req)


def parse_list(
    listing: ListSpec,
    spec: ProviderSpec,
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    reference: str | None = None,
) -> o.CallOutcome:
    """The jobs a listing (`[reconcile] list`) names, those holding `reference` when the
    provider file says where an item holds it (`match`)."""
    req = parse.request_id(spec, headers)
    if not 200 <= status < 300:
        return parse.error_outcome(AttemptKind.RECONCILE, status, headers, body, req)
    document, problem = parse.read_json(body)
    if problem is not None:
        return o.Ambiguous(reason=f"lookup {problem}", http_status=status, request_id=req)
    items = find(document, listing.items, MISSING)
    if not isinstance(items, list):
        return o.Ambiguous(
            reason=f"the lookup answer has no list at `{listing.items}`",
            http_status=status,
            request_id=req,
        )
    ids = []
    # a provider that names its jobs by resource name lists them by that name too
    names = any(source.kind is SourceKind.NAME for source in spec.identity)
    for item in items:
        other = listing.match is not None and find(item, listing.match) != reference
        if other and reference is not None:
            continue  # another job: the list is filtered here, not by the provider
        job_id, problem = parse.job_id_at(item, listing.job_id, slashes=names)
        if job_id is None:
            return o.Ambiguous(
                reason=f"a listed item is unreadable: {problem}", http_status=status, request_id=req
            )
        ids.append(job_id)
    return o.Found(job_ids=tuple(ids), http_status=status, request_id=req)
