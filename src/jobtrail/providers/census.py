"""A census's calls: the listing reconciliation declares (`[reconcile] list` or `lookup`),
or the census's own (`[census] list`), read for every job it names (core/census.py judges
them).

The requests are the provider file's own: the same URL, headers, credential, timeout, answer
size cap and redaction as reconciliation's lookups (http.py sends them, unchanged). What a
census adds is reading each listed item: its id (`job_id`), our marker (`match`, or the
reference the provider filtered on), its state (`[status] state` through `[states]`) and its
creation time (`created`), and the path values `[census] path_values` names. A marker that
is our idempotency token (`[census] marker = "token"`) counts only in our token's shape.
Nothing here decides what a job is to the ledger.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from jobtrail.core import outcomes as o
from jobtrail.core.census import Listed
from jobtrail.core.classify import Failed, Sent, classify
from jobtrail.core.ids import is_token
from jobtrail.core.lookup import MISSING, find
from jobtrail.core.model import AttemptKind, Operation
from jobtrail.core.redact import Redactor
from jobtrail.core.states import RemoteStatus
from jobtrail.providers.file.spec import ProviderSpec, SourceKind
from jobtrail.providers.http import parse
from jobtrail.providers.http.authorize import NoCredential
from jobtrail.providers.http.provider import HttpProvider, Prepared
from jobtrail.providers.http.reading import read_state
from jobtrail.providers.http.scanning import moment
from jobtrail.providers.protocol import Reply

# The marker an item holds when the provider filtered the listing on our reference: the
# census's own tag says which operation it asked for.
_FILTERED = "filtered"


class Lister(HttpProvider):
    """The provider file's listing as a census reads it: every item named."""

    def __init__(self, spec: ProviderSpec, *args: Any, **kwargs: Any) -> None:
        self.census = spec.census
        if spec.census is not None:  # the census's own listing, paged as a scan is
            spec = replace(spec, listing=spec.census.listing, lookup=None)
        super().__init__(spec, *args, **kwargs)
        self._items: dict[str, list[Listed]] = {}
        self._markers: dict[str, str | None] = {}

    def first_url(self) -> str | None:
        """The listing's first page, when it lists every job (a scan: no reference of one
        operation in its path); None when it names none that a census can ask alone."""
        listing = self.spec.listing
        if listing is None or listing.match is None or "{" in listing.path:
            return None
        return self.spec.base_url + listing.path

    def url_for(self, op: Operation) -> str | None:
        """The lookup reconciliation makes for `op` (a filtered listing, a lookup by key)."""
        prepared = self._prepare(AttemptKind.RECONCILE, op)
        return None if isinstance(prepared, str) else prepared.url

    def described(self, url: str) -> dict[str, Any]:
        """The request, as its attempt records it (the credential never)."""
        headers = self._headers()
        if self.spec.auth:
            headers[self.spec.auth.header] = "[redacted]"
        return {"method": "GET", "url": url, "headers": self._redactor().header_map(headers)}

    async def listed(self, url: str, tag: str, marker: str | None) -> tuple[Reply, list[Listed]]:
        """One listing request: the answer as reconciliation reads it, and every job on it
        (`marker`: the operation the provider filtered on, None for a listing to scan)."""
        headers = self._headers()
        auth = self.spec.auth
        try:
            credential = await self._auth.credential()
        except NoCredential as exc:
            reason = str(exc)
            outcome = classify(AttemptKind.RECONCILE, Failed(sent=Sent.NO, reason=reason))
            return Reply(outcome=outcome, detail={"error": reason}), []
        if auth is not None and credential is not None:
            headers[auth.header] = credential
        self._markers[tag] = marker
        request = Prepared(method="GET", url=url, headers=headers)
        reply = await self._send(AttemptKind.RECONCILE, request, self.spec.max_response_bytes, tag)
        self._markers.pop(tag, None)
        return reply, self._items.pop(tag, [])

    def redactor_now(self) -> Redactor:
        """What keeps this provider's secrets out of a census's record."""
        return self._redactor()

    def _headers(self) -> dict[str, str]:
        return {"Accept": "application/json", **self.spec.headers}

    def _read(
        self,
        kind: AttemptKind,
        status: int,
        headers: dict[str, str],
        body: bytes,
        detail: dict[str, Any],
        url: str,
        operation_id: str,
        via: str | None = None,
    ) -> Reply:
        reply = super()._read(kind, status, headers, body, detail, url, operation_id, via)
        found = reply.outcome
        # a lookup's absent code (404) names no job; a listing names its items
        named = self.spec.lookup is None or (isinstance(found, o.Found) and found.job_ids)
        if operation_id in self._markers and isinstance(found, o.Found) and named:
            self._items[operation_id] = self._jobs(body, self._markers[operation_id])
        return reply

    def _jobs(self, body: bytes, filtered: str | None) -> list[Listed]:
        """Every job the answer names (those it cannot read are left out: the
        reconciliation reading has already judged the answer readable)."""
        document, _ = parse.read_json(body)
        spec = self.spec
        if spec.lookup is not None:
            items: Any = [document]
            path, match, created = spec.lookup.job_id, None, None
        else:
            assert spec.listing is not None
            listing = spec.listing
            items = find(document, listing.items, MISSING)
            path, match, created = listing.job_id, listing.match, listing.created
        names = any(source.kind is SourceKind.NAME for source in spec.identity)
        jobs = []
        for item in items if isinstance(items, list) else []:
            job_id, _ = parse.job_id_at(item, path, slashes=names)
            if job_id is None:
                continue
            marker = find(item, match) if match is not None else filtered
            if self.census is not None and self.census.token and not is_token(marker):
                marker = None  # not our token's shape: not ours
            word, status, _ = read_state(spec.status_rule, spec.states, 200, item)
            jobs.append(
                Listed(
                    job_id=job_id,
                    marker=marker if isinstance(marker, str) and marker else None,
                    state=word,
                    status=status if word is not None else RemoteStatus.UNKNOWN,
                    created=moment(find(item, created)) if created else None,
                    path=self._path_values(item),
                )
            )
        return jobs

    def _path_values(self, item: Any) -> dict[str, str]:
        """The values `[census] path_values` reads from a listed item (those it holds)."""
        fields = self.census.path_values if self.census is not None else {}
        read = {name: find(item, path) for name, path in fields.items()}
        return {name: value for name, value in read.items() if isinstance(value, str) and value}
