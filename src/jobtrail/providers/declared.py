"""The provider file's keys for what an API promises beyond its calls (docs/providers.md,
"Deadlines, reconciliation tiers, work done and billed"):

- `[create] deadline`: where the provider takes a deadline of its own, in what unit and
  granularity (core/remote_deadline.py writes the result deadline there at submit);
- `[reconcile] token_kept`: how long the provider remembers a create token;
- `[reconcile] list` `pages`, `within`, `next`, `cursor`, `more`, `created`: the bounds of a
  scan of a listing matched on our side (`match`), and how to page through it;
- `[status] usage`: where a status answer reports work done and billed.
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

DEADLINE_KEYS = frozenset({"header", "field", "unit", "format", "step", "min", "max"})
SCAN_KEYS = frozenset({"pages", "within", "next", "cursor", "more", "created"})
USAGE_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
MAX_PAGES = 50


def remote_deadline(value: Any, *, code: bool = False) -> RemoteDeadline | None:
    """`[create] deadline = { field = "timeout_hours", unit = "h", min = 1, max = 168 }`."""
    where = "deadline" if code else "create.deadline"
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ProviderConfigError(f'{where} must be a table such as {{ header = "Cancel-After" }}')
    unknown = sorted(set(value) - DEADLINE_KEYS)
    if unknown:
        known = ", ".join(sorted(DEADLINE_KEYS))
        raise ProviderConfigError(f"unknown key {unknown[0]!r} in {where}; known keys: {known}")
    if code and "header" in value:
        raise ProviderConfigError(f"{where}: a code provider takes its deadline in a field")
    fmt = value.get("format", "text" if "header" in value else "number")
    numbers = {k: value.get(k) for k in ("step", "min", "max")}
    for key, number in numbers.items():
        if number is not None and (isinstance(number, bool) or not isinstance(number, int)):
            raise ProviderConfigError(f"{where}.{key} must be a whole number of units")
    try:
        return RemoteDeadline(
            header=_text(value, "header", where),
            field=_text(value, "field", where),
            unit=str(value.get("unit", "s")),
            form=Form(fmt) if fmt in ("number", "text") else _bad_format(where),
            step=numbers["step"] or 1,
            least=numbers["min"] or 1,
            most=numbers["max"],
        )
    except InvalidInput as exc:
        raise ProviderConfigError(f"{where}: {exc} (units: {', '.join(UNITS)})") from None


def _bad_format(where: str) -> Form:
    raise ProviderConfigError(
        f'{where}.format must be "number" (72) or "text" (the number and its unit: "72h")'
    )


def _text(table: dict[str, Any], key: str, where: str) -> str | None:
    value = table.get(key)
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise ProviderConfigError(f"{where}.{key} must be a header name or a dotted path")
    return value


def token_kept(value: Any, create_deadline: timedelta) -> timedelta | None:
    """`[reconcile] token_kept = "24h"`: how long the provider remembers a create token.
    The create deadline must end within it: a retry after the provider forgot the token
    could make a second job."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ProviderConfigError('reconcile.token_kept must be a duration such as "24h"')
    kept = parse_duration(value)
    if create_deadline > kept:
        raise ProviderConfigError(
            f"the create deadline ({format_duration(create_deadline)}) is longer than the provider "
            f"keeps a token (reconcile.token_kept = {value!r}): a retry after that could make "
            "a second job; shorten [deadlines] create"
        )
    return kept


def scan(listing: dict[str, Any], timeout: timedelta) -> dict[str, Any]:
    """The scan keys of `[reconcile] list`, as ListSpec arguments. A listing matched on our
    side (`match`) is scanned: one page unless `pages` says more, within the call timeout
    unless `within` says less; `next` names the query parameter that asks for the page
    after the one whose `cursor` field the answer holds."""
    keys = set(listing) & SCAN_KEYS
    if keys and "match" not in listing:
        raise ProviderConfigError(
            f"reconcile.list.{sorted(keys)[0]} bounds a scan matched on our side: it needs "
            "reconcile.list.match (a filtered listing is read in one page)"
        )
    pages = listing.get("pages", 1)
    if isinstance(pages, bool) or not isinstance(pages, int) or not 1 <= pages <= MAX_PAGES:
        raise ProviderConfigError(
            f"reconcile.list.pages must be a whole number from 1 to {MAX_PAGES}"
        )
    within = parse_duration(listing["within"]) if "within" in listing else timeout
    if within > timeout or within <= timedelta(0):
        raise ProviderConfigError(
            "reconcile.list.within must be positive and no longer than the call timeout "
            "(the scan is one call, renewed under one lease)"
        )
    if pages > 1 and not ("next" in listing and "cursor" in listing):
        raise ProviderConfigError(
            "reconcile.list.pages above 1 needs `next` (the query parameter asking for the next "
            "page) and `cursor` (the answer's field holding its value)"
        )
    found = {}
    for key in ("next", "cursor", "more", "created"):
        if key in listing and (not isinstance(listing[key], str) or not listing[key]):
            raise ProviderConfigError(f"reconcile.list.{key} must name a field or parameter")
        found[key] = listing.get(key)
    return {"pages": pages, "within": within, **found}


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
