"""The provider file's keys for what an API promises beyond its calls (docs/providers.md,
"Deadlines, reconciliation tiers, work done and billed"):

- `[create] deadline`: where the provider takes a deadline of its own, in what unit and
  granularity (core/remote_deadline.py writes the result deadline there at submit);
- `[reconcile] token_kept`: how long the provider remembers a create token;
- `[reconcile] list` `pages`, `within`, `next`, `cursor`, `more`, `created`: the bounds of a
  scan of a listing matched on our side (`match`), and how to page through it;
- `[status] usage`: where a status answer reports work done and billed;
- `[census]`: a listing of every job that only the census reads (docs/census.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from jobtrail.core.census import sight_rule
from jobtrail.core.durations import format_duration, parse_duration
from jobtrail.core.model import Capabilities
from jobtrail.core.proof import deadline_rule, tier_rule
from jobtrail.core.remote_deadline import UNITS, Form, RemoteDeadline
from jobtrail.errors import InvalidInput, ProviderConfigError
from jobtrail.providers.file.keys import CensusKeys, DeadlineKeys, ListKeys
from jobtrail.providers.file.schema import default_of, read
from jobtrail.providers.file.spec import CensusSpec, ListSpec

SCAN_KEYS = ("pages", "within", "next", "cursor", "more", "created", "offset", "total")
USAGE_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
MAX_PAGES = 50


def remote_deadline(
    value: DeadlineKeys | dict[str, Any] | None, *, code: bool = False
) -> RemoteDeadline | None:
    """`[create] deadline = { field = "timeout_hours", unit = "h", min = 1, max = 168 }`."""
    where = "deadline" if code else "create.deadline"
    if value is None:
        return None
    if not isinstance(value, DeadlineKeys):
        if not isinstance(value, dict):
            raise ProviderConfigError(
                f'{where} must be a table such as {{ header = "Cancel-After" }}'
            )
        value = read(DeadlineKeys, value, where)
    if code and value.header is not None:
        raise ProviderConfigError(f"{where}: a code provider takes its deadline in a field")
    fmt = value.format or ("text" if value.header is not None else "number")
    for name in ("header", "field"):
        text = getattr(value, name)
        if text is not None and not text.strip():
            raise ProviderConfigError(f"{where}.{name} must be a header name or a dotted path")
    try:
        return RemoteDeadline(
            header=value.header,
            field=value.field,
            unit=value.unit,
            form=Form(fmt) if fmt in ("number", "text") else _bad_format(where),
            step=value.step or 1,
            least=value.min or 1,
            most=value.max,
        )
    except InvalidInput as exc:
        raise ProviderConfigError(f"{where}: {exc} (units: {', '.join(UNITS)})") from None


def _bad_format(where: str) -> Form:
    raise ProviderConfigError(
        f'{where}.format must be "number" (72) or "text" (the number and its unit: "72h")'
    )


def token_kept(value: str | None, create_deadline: timedelta) -> timedelta | None:
    """`[reconcile] token_kept = "24h"`: how long the provider remembers a create token.
    The create deadline must end within it: a retry after the provider forgot the token
    could make a second job."""
    if value is None:
        return None
    try:
        kept = parse_duration(value)
    except InvalidInput as exc:
        raise ProviderConfigError(f"reconcile.token_kept: {exc}") from None
    if create_deadline > kept:
        raise ProviderConfigError(
            f"the create deadline ({format_duration(create_deadline)}) is longer than the provider "
            f"keeps a token (reconcile.token_kept = {value!r}): a retry after that could make "
            "a second job; shorten [deadlines] create"
        )
    return kept


def scan(listing: ListKeys, timeout: timedelta, where: str = "reconcile.list") -> dict[str, Any]:
    """The scan keys of `[reconcile] list` (or of the census's, `where`), as ListSpec
    arguments. A listing matched on our side (`match`) is scanned: one page unless `pages`
    says more, within the call timeout unless `within` says less; `next` names the query
    parameter that asks for the page after the one whose `cursor` field the answer holds, or
    `offset` the one that takes how many items the pages before held (`total`: the answer's
    count of them all)."""
    given = [k for k in SCAN_KEYS if getattr(listing, k) != default_of(ListKeys, k)]
    if given and listing.match is None:
        raise ProviderConfigError(
            f"{where}.{sorted(given)[0]} bounds a scan matched on our side: it needs "
            f"{where}.match (a filtered listing is read in one page)"
        )
    if not 1 <= listing.pages <= MAX_PAGES:
        raise ProviderConfigError(f"{where}.pages must be a whole number from 1 to {MAX_PAGES}")
    within = timeout if listing.within is None else listing.within
    if within > timeout or within <= timedelta(0):
        raise ProviderConfigError(
            f"{where}.within must be positive and no longer than the call timeout "
            "(the scan is one call, renewed under one lease)"
        )
    if listing.offset is not None and (listing.next or listing.cursor):
        raise ProviderConfigError(
            f"{where}.offset pages by position: not with `next` and `cursor` (by cursor)"
        )
    if listing.total is not None and listing.offset is None:
        raise ProviderConfigError(f"{where}.total counts items paged by position: needs `offset`")
    if listing.pages > 1 and not (listing.next and listing.cursor) and not listing.offset:
        raise ProviderConfigError(
            f"{where}.pages above 1 needs `next` (the query parameter asking for the next "
            "page) and `cursor` (the answer's field holding its value), or `offset`"
        )
    found: dict[str, Any] = {}
    for key in ("next", "cursor", "more", "created", "offset", "total"):
        if getattr(listing, key) == "":
            raise ProviderConfigError(f"{where}.{key} must name a field or parameter")
        found[key] = getattr(listing, key)
    return {"pages": listing.pages, "within": within, **found}


def census(
    keys: CensusKeys | None,
    timeout: timedelta,
    *,
    token: bool,
    reference: bool,
    submitted: tuple[str, ...],
) -> CensusSpec | None:
    """`[census]`: `list` names every job (no placeholder in its path), our marker read at
    `match` on each: the operation id the create placed (`marker = "reference"`) or the
    idempotency token (`"token"`); `path_values` reads, from each listed job, values a
    path needs (Airflow's `dag_id`), so that a job adopted from the census can be read."""
    if keys is None:
        return None
    listing = keys.list
    if not listing.match:
        raise ProviderConfigError(
            "census.list.match must name the item field holding our marker (the census reads "
            "it on every listed job)"
        )
    if "{" in listing.path:
        raise ProviderConfigError(
            "census.list.path must list every job: it may hold no {placeholder}"
        )
    if keys.marker == "token" and not token:
        raise ProviderConfigError('census.marker = "token" needs create.idempotency')
    if keys.marker == "reference" and not reference:
        raise ProviderConfigError('census.marker = "reference" needs create.client_reference')
    values: dict[str, str] = {}
    for name, field in (keys.path_values or {}).items():
        if name not in submitted:
            known = ", ".join(submitted) or "none"
            raise ProviderConfigError(
                f"census.path_values.{name}: not a value given at submit (theirs: {known})"
            )
        if not isinstance(field, str) or not field:
            raise ProviderConfigError(f"census.path_values.{name} must be a dotted path")
        values[str(name)] = field
    found = ListSpec(
        path=listing.path,
        items=listing.items,
        job_id=listing.job_id,
        match=listing.match,
        visible_within=None,
        **scan(listing, timeout, "census.list"),
    )
    return CensusSpec(listing=found, token=keys.marker == "token", path_values=values)


def usage(value: Any) -> dict[str, str]:
    """`[status] usage = { input_tokens = "usage.input_tokens", requests = "..." }`: names
    (lowercase words) for the numbers a status answer reports, at dotted paths."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not value:
        raise ProviderConfigError(
            'status.usage must be a table such as { input_tokens = "usage.input_tokens" }'
        )
    for name, path in value.items():
        if not USAGE_NAME.fullmatch(str(name)):
            raise ProviderConfigError(
                f"status.usage: {name!r} is not a usage name (lowercase letters, digits and _)"
            )
        if not isinstance(path, str) or not path:
            raise ProviderConfigError(f"status.usage.{name} must be a dotted path")
    return {str(k): str(v) for k, v in value.items()}


def declared_lines(
    caps: Capabilities,
    create_deadline: timedelta,
    deadline: RemoteDeadline | None,
    usage_paths: Mapping[str, str] | None,
    census: str | None = None,
) -> list[tuple[str, str]]:
    """What `provider check` says of the tier, the remote deadline and the usage, for a
    provider file and a code provider alike (the sentences are core/proof.py's; `census`:
    what a code provider's own listing shows)."""
    if usage_paths is None:
        reported = "as the provider's code reads it"
    elif usage_paths:
        reported = "read from the status answer: " + ", ".join(
            f"{name} at `{path}`" for name, path in sorted(usage_paths.items())
        )
    else:
        reported = "none declared ([status] usage)"
    return [
        ("reconciliation tier", tier_rule(caps, create_deadline)),
        ("census sees", sight_rule(caps, code=usage_paths is None, listing=census)),
        ("remote deadline", deadline_rule(deadline)),
        ("usage", reported + "; kept with the final observation, summed by `list --json`"),
    ]
