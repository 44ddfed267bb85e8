"""The operations list's filters (state, provider, actor, key, creation time, page) as the
query parameters of `/operations`, and the same fields in a bulk action's form."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from jobtrail.core.states import State
from jobtrail.errors import InvalidInput
from jobtrail.ledger import OperationQuery

PAGE_SIZE = 50
FILTER_NAMES = ("state", "provider", "actor", "key", "from", "until")


def filters_of(given: Mapping[str, str], *, paged: bool = True) -> dict[str, str]:
    """The filter fields of `given` that hold something (and `page`, if `paged`)."""
    names = (*FILTER_NAMES, "page") if paged else FILTER_NAMES
    return {k: str(given[k]).strip() for k in names if k in given and str(given[k]).strip()}


def query_of(form: Mapping[str, str], *, limit: int = PAGE_SIZE) -> OperationQuery:
    try:
        states = (State(form["state"]),) if form.get("state") else ()
    except ValueError:
        raise InvalidInput(f"no state {form['state']!r}") from None
    try:
        number = max(1, int(form.get("page", "1")))
    except ValueError:
        raise InvalidInput("page must be a number") from None
    return OperationQuery(
        states=states,
        provider=form.get("provider"),
        actor=form.get("actor"),
        key=form.get("key"),
        created_from=_time(form.get("from")),
        created_until=_time(form.get("until")),
        offset=(number - 1) * limit,
        limit=limit,
    )


def _time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInput(
            f"{text!r} is not a time; write 2026-12-01 or 2026-12-01T09:30"
        ) from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)
