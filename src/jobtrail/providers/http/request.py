"""The generic HTTP provider's requests: a provider file's paths filled in for one call.

Paths take the operation's ids percent-encoded; a status URL a create answer named is used
only on the provider's origin (scheme, host, port), so an answer can never steer our
credentials elsewhere. `describe` is what the ledger records of a request: sanitized.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import aiohttp
from yarl import URL

from jobtrail.core.model import AttemptKind, Capabilities, Operation
from jobtrail.core.redact import Redactor
from jobtrail.errors import JobtrailError
from jobtrail.providers.file import pathvalues
from jobtrail.providers.file.config import ProviderSpec
from jobtrail.providers.file.spec import Cookies, SourceKind
from jobtrail.providers.http import parse, reading
from jobtrail.providers.http.authorize import Authorizer
from jobtrail.providers.http.cookies import OperationCookies
from jobtrail.providers.http.placement import place, reference_value, written_fields
from jobtrail.randomness import PooledSystemRandom

_ORIGINS_KEPT = 8192  # status URLs resolved and remembered (about one per operation in flight)

_KEEP_HEADERS = (
    "content-type",
    "content-length",
    "location",
    "operation-location",
    "azure-asyncoperation",
    "retry-after",
    "x-request-id",
    "request-id",
    "idempotent-replayed",
    "x-checksum-sha256",
    "x-record-count",
)


# Headers that name one request or answer, whichever provider sends them.
_REQUEST_ID_HEADERS = frozenset({"x-request-id", "request-id"})


@dataclass(frozen=True, kw_only=True)
class Prepared:
    method: str
    url: str
    headers: dict[str, str]
    body: bytes | None = None


def _acted_on(spec: ProviderSpec) -> frozenset[str]:
    """The answer headers the provider file has jobtrail act on (a status URL or the job
    named by a header, a monitor's own rule), lowercased: each is kept with the answer, so
    the record shows what was followed."""
    sources = (*spec.status_from, *spec.identity)
    named = {s.name.lower() for s in sources if s.kind is SourceKind.HEADER}
    return frozenset(named | {name.lower() for name in spec.status_by_header})


class HttpRequests:
    """The provider's state and its requests (the calls are in http.py, the answers in
    httpanswer.py)."""

    def __init__(self, spec: ProviderSpec, session: aiohttp.ClientSession) -> None:
        self.spec, self.session = spec, session
        self.name: str = spec.name
        self.capabilities: Capabilities = spec.capabilities
        self._rand = PooledSystemRandom()
        self._auth = Authorizer(spec)
        self._redactors: dict[tuple[str, ...], Redactor] = {}
        self._origins: dict[tuple[str, str], str | None] = {}
        # the session keeps no cookies; only a provider file that asks gets them, per operation
        self._cookies = OperationCookies() if spec.cookies is Cookies.PER_OPERATION else None
        # answer headers kept in the record: the usual ones and those naming request ids
        named = (*spec.request_id_headers, spec.client_request_id_header or "")
        self._keep = frozenset(_KEEP_HEADERS) | {n.lower() for n in named if n} | _acted_on(spec)
        # a status answer's identity (answer.py `_identity`): the kept headers but those that
        # name the request (new on every answer, recorded, never acted on) and the length
        ids = {n.lower() for n in named if n} | _REQUEST_ID_HEADERS
        self._identifying = self._keep - ids - {"content-length"}

    def _redactor(self) -> Redactor:
        """Secrets are read from the environment on every call (they may be rotated); the
        redactor for a set of them is built once, not twice per call."""
        values = tuple(self.spec.secret_values())
        redactor = self._redactors.get(values)
        if redactor is None:
            redactor = self._redactors[values] = self.spec.redactor.extended(values=values)
        return redactor

    # -- building requests --------------------------------------------------------------

    def _url(self, path: str, op: Operation) -> str:
        """A path template filled in; each id is percent-encoded as one path segment, and
        `{job_url}` is a job whose identity is its URL on the provider's origin, maybe with a
        suffix to its path (`{job_url}:cancel`, `{job_url}/cancel`; the query is kept)."""
        if path.startswith("{job_url}"):
            url = self._same_origin(op.remote_job_id or "", op)
            if url is None or not op.remote_job_id:
                raise _Unsendable("the remote job is not a URL on the provider's origin")
            suffix = path.removeprefix("{job_url}")
            if not suffix:
                return url
            resource, mark, query = url.partition("?")
            return resource + suffix + mark + query
        if "{job_id}" in path:
            job_id = op.remote_job_id or ""
            names = any(s.kind is SourceKind.NAME for s in self.spec.identity)
            unsafe = parse.unsafe_name(job_id) if names else parse.unsafe_segment(job_id)
            if unsafe is not None:
                raise _Unsendable(f"the remote job id {job_id!r} {unsafe}; nothing was sent")
            encoded = "/".join(quote(part, safe="") for part in job_id.split("/"))
            path = path.replace("{job_id}", encoded if names else quote(job_id, safe=""))
        if op.request.path:  # the values given at submit, checked then (pathvalues.py)
            path = pathvalues.fill(path, op.request.path)
        if "{client_reference}" in path:  # the reference as the create placed it
            path = path.replace(
                "{client_reference}", quote(reference_value(self.spec, op), safe="")
            )
        # our own keys: the token names the job where the provider keys it by the token
        path = path.replace("{idempotency_token}", quote(op.idempotency_token, safe=""))
        return self.spec.base_url + path.replace("{operation_id}", quote(op.operation_id, safe=""))

    def _status_url(self, op: Operation) -> str | None:
        if op.status_url:
            url = self._same_origin(op.status_url, op)
            if url is not None:
                return url
        return self._url(self.spec.status_path, op) if self.spec.status_path else None

    def _via(self, op: Operation) -> str | None:
        """The answer header that named the status URL in use (None for [status] path)."""
        if op.status_url and self._same_origin(op.status_url, op) is not None:
            return op.status_via
        return None

    def _same_origin(self, reference: str, op: Operation) -> str | None:
        """The status URL a create answer named, resolved against the create URL (RFC 3986:
        it is a reference in the answer to that request), if it stays on the provider's
        origin (scheme, host, port) and carries no user info."""
        create_url = self.spec.base_url + pathvalues.fill(self.spec.create_path, op.request.path)
        # A poll asks this three times (the recorded request, the sent one, the header that
        # named the URL) and every poll of an operation asks it again: the answer is a pure
        # function of the two URLs, worked out once per pair.
        key = (create_url, reference)
        if key in self._origins:
            return self._origins[key]
        if len(self._origins) >= _ORIGINS_KEPT:
            self._origins.clear()
        url = self._origins[key] = reading.same_origin(self.spec.base_url, create_url, reference)
        return url

    def _prepare(self, kind: AttemptKind, op: Operation) -> Prepared | str:
        """The request to send, or why it cannot be sent."""
        try:
            return self._prepared(kind, op)
        except _Unsendable as exc:
            return str(exc)

    # C901: a match on the call kind: one request shape per kind of call
    def _prepared(self, kind: AttemptKind, op: Operation) -> Prepared | str:  # noqa: C901
        spec = self.spec
        headers = {"Accept": "application/json", **spec.headers}
        body: bytes | None = None
        match kind:
            case AttemptKind.CREATE:
                method, url = spec.create_method, self._url(spec.create_path, op)
                placed = place(spec, op, op.request.body, headers)
                if isinstance(placed, str):
                    return placed
                document, query = placed
                headers |= op.request.headers
                if query:
                    url = str(URL(url).update_query(query))
                if document is not None:
                    headers["Content-Type"] = "application/json"
                    body = json.dumps(document, ensure_ascii=False).encode("utf-8")
            case AttemptKind.STATUS:
                method, status_url = "GET", self._status_url(op)
                if status_url is None:
                    return "no usable status URL: set [status] path in the provider file"
                url = status_url
            case AttemptKind.CANCEL:
                if spec.cancel_path is None:
                    return "the provider file has no [cancel] path"
                method, url = spec.cancel_method, self._url(spec.cancel_path, op)
                if spec.cancel_body is not None:
                    headers["Content-Type"] = "application/json"
                    body = json.dumps(spec.cancel_body, ensure_ascii=False).encode("utf-8")
            case AttemptKind.RESULT:
                rule = spec.result
                if rule.source != "path" or rule.link:
                    # the result is (or is named in) the status answer: read it again
                    status_url = self._status_url(op)
                    if status_url is None:
                        return "no usable status URL to read the result from"
                    method, url = "GET", status_url
                elif rule.path is None:
                    return "the provider file has no [result] path"
                else:
                    method, url = "GET", self._url(rule.path, op)
                    headers["Accept"] = rule.content_type or "*/*"
            case AttemptKind.RECONCILE:
                found = spec.listing or spec.lookup
                if found is None:
                    return "the provider file has no [reconcile] list or lookup"
                method, url = "GET", self._url(found.path, op)
        if spec.trace_header:
            headers[spec.trace_header] = op.trace_id
        return Prepared(method=method, url=url, headers=headers, body=body)

    def describe(self, kind: AttemptKind, op: Operation) -> dict[str, Any]:
        prepared = self._prepare(kind, op)
        if isinstance(prepared, str):
            return {"unsendable": prepared}
        headers = dict(prepared.headers)
        if self.spec.auth:
            headers[self.spec.auth.header] = "[redacted]"
        described: dict[str, Any] = {
            "method": prepared.method,
            "url": prepared.url,
            "headers": self._redactor().header_map(headers),
        }
        if kind is AttemptKind.CREATE:
            # what jobtrail wrote into the body (the stored request holds none of it): the
            # attempt says what was sent, field by field, beside the operation's own body
            written = written_fields(self.spec, op)
            if written:
                described["body_fields"] = self._redactor().json(written)
        return described

    # -- making calls -----------------------------------------------------------------


class _Unsendable(JobtrailError):
    """A request that must not be sent; the message says why (never leaves this module)."""
