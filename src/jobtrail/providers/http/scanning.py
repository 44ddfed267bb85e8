"""Reading one page of a scanned listing: the jobs on it holding our reference, the cursor
to the next page, how old its oldest job is (the HTTP provider pages through, http.py).
Pure functions of an answer, like parse.py.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from yarl import URL

from jobtrail.core import outcomes as o
from jobtrail.core.lookup import find
from jobtrail.providers.file.spec import ListSpec, ProviderSpec
from jobtrail.providers.http import lookup, parse
from jobtrail.providers.protocol import Reply

# A listed job created this long before the operation was submitted is taken as older than
# any create of the operation: a margin for the provider's clock running behind ours.
CLOCK_MARGIN = timedelta(minutes=5)


@dataclass(frozen=True, kw_only=True)
class Page:
    """What one page of a scanned listing says beyond the jobs on it."""

    cursor: str | None  # the value that asks for the next page, None: none named
    more: bool | None  # the answer's own "more pages" flag, None: not declared or absent
    oldest: datetime | None  # the creation time of the oldest job listed, when declared
    count: int = 0  # the items on the page, ours or not
    total: int | None = None  # the answer's count of every item listed (`total`), if read

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"oldest": self.oldest.isoformat() if self.oldest else None}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Page:
        oldest, count, total = doc.get("oldest"), doc.get("count"), doc.get("total")
        return cls(
            cursor=doc.get("cursor"),
            more=doc.get("more"),
            oldest=datetime.fromisoformat(oldest) if isinstance(oldest, str) else None,
            count=count if isinstance(count, int) else 0,
            total=total if isinstance(total, int) else None,
        )

    def reaches_back(self, submitted: datetime) -> bool:
        """Whether the page lists a job created before any create of an operation submitted
        at `submitted` could have reached the provider: newer pages cannot be skipped."""
        return self.oldest is not None and self.oldest < submitted - CLOCK_MARGIN

    def last(self, listing: ListSpec, listed: int = 0) -> bool:
        """Whether no page follows this one, as the answer says (`listed`: the items of
        this page and those before it, for a listing paged by position)."""
        if self.more is not None:
            return not self.more
        if listing.cursor is not None:
            return self.cursor is None
        if listing.offset is not None:
            return self.count == 0 or (self.total is not None and listed >= self.total)
        return False  # nothing says: the listing may go on

    def following(self, listing: ListSpec, listed: int) -> dict[str, str] | None:
        """The query that asks for the next page, None when the listing names none."""
        if listing.offset is not None:
            return {listing.offset: str(listed)}
        if self.cursor is None or listing.next is None:
            return None
        return {listing.next: self.cursor}


def read_page(
    listing: ListSpec,
    spec: ProviderSpec,
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    reference: str,
) -> tuple[o.CallOutcome, Page | None]:
    """One page of a listing matched on our side: the jobs holding `reference`, and where
    the listing goes on."""
    found = lookup.parse_list(listing, spec, status, headers, body, reference=reference)
    if not isinstance(found, o.Found):
        return found, None
    document, _ = parse.read_json(body)
    cursor = find(document, listing.cursor) if listing.cursor else None
    more = find(document, listing.more) if listing.more else None
    items = find(document, listing.items)
    total = find(document, listing.total) if listing.total else None
    times = [
        when
        for item in (items if isinstance(items, list) else [])
        if listing.created and (when := moment(find(item, listing.created))) is not None
    ]
    page = Page(
        cursor=cursor if isinstance(cursor, str) and cursor.strip() else None,
        more=more if isinstance(more, bool) else None,
        oldest=min(times) if times else None,
        count=len(items) if isinstance(items, list) else 0,
        total=total if isinstance(total, int) and not isinstance(total, bool) else None,
    )
    return found, page


def moment(value: Any) -> datetime | None:
    """A creation time as providers write it: Unix seconds, or RFC 3339 text."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) and math.isfinite(value) and 0 <= value < 1e11:
        return datetime.fromtimestamp(value, UTC)
    if isinstance(value, str) and value.strip():
        text = value.strip().replace("Z", "+00:00").replace("z", "+00:00")
        try:
            when = datetime.fromisoformat(text)
        except ValueError:
            return None
        return when if when.tzinfo is not None else when.replace(tzinfo=UTC)
    return None


async def scan(
    first: Reply,
    url: str,
    listing: ListSpec,
    submitted: datetime,
    fetch: Callable[[str], Awaitable[Reply]],
) -> Reply:
    """Page through a listing from its first page (`first`, fetched from `url`) until the
    scan has seen every job that could be ours: the listing ended, or a page reached jobs
    created before the operation was submitted. It stops short at `listing.pages` pages or
    after `listing.within`: a miss is then `capped`, which proves nothing."""
    started = time.monotonic()
    replies: list[Reply] = [first]
    found: list[str] = []
    listed = 0
    reply = first
    while True:
        outcome, info = reply.outcome, reply.detail.get("page")
        if not isinstance(outcome, o.Found) or not isinstance(info, dict):
            return _joined(replies, reply.outcome, found)  # an error answer: as it is
        found += [j for j in outcome.job_ids if j not in found]
        page = Page.from_json(info)
        listed += page.count
        if page.reaches_back(submitted) or page.last(listing, listed):
            return _joined(replies, _found(outcome, found, None), found)
        following = page.following(listing, listed)
        why = None
        if len(replies) >= listing.pages:
            why = f"the scan stopped at its cap of {listing.pages} page(s)"
        elif time.monotonic() - started >= listing.within.total_seconds():
            why = f"the scan stopped at its cap of {listing.within.total_seconds():g}s"
        elif following is None:
            why = "the listing names no next page, and its last page did not reach the create"
        if why is not None or following is None:
            why = f"{why} before it reached jobs older than the create"
            return _joined(replies, _found(outcome, found, why), found)
        reply = await fetch(str(URL(url).update_query(following)))
        replies.append(reply)


def _found(last: o.Found, job_ids: list[str], capped: str | None) -> o.Found:
    return o.Found(
        job_ids=tuple(job_ids),
        http_status=last.http_status,
        request_id=last.request_id,
        capped=None if job_ids else capped,
    )


def _joined(replies: list[Reply], outcome: o.CallOutcome | None, found: list[str]) -> Reply:
    """The scan as one attempt: its outcome, and each page's detail."""
    if len(replies) == 1:
        detail = dict(replies[0].detail)
    else:
        # each page as it was answered, its body kept only for the last (a record per scan,
        # not a copy of the provider's listing)
        pages = [{k: v for k, v in r.detail.items() if k != "body"} for r in replies[:-1]]
        detail = {**replies[-1].detail, "pages": [*pages, replies[-1].detail]}
    detail["scanned"] = {"pages": len(replies), "found": list(found)}
    if isinstance(outcome, o.Found) and outcome.capped:
        detail["error"] = outcome.capped
    return Reply(outcome=outcome, detail=detail)
