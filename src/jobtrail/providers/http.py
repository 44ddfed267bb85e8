"""The generic HTTP provider: a provider file turned into calls, over aiohttp.

Credentials are read from the environment at call time and exist only in the outgoing
request; what we record is the sanitized description (`describe`) and sanitized response
metadata. Redirects are not followed and status URLs pointing at another origin are not
used, so a provider's answer can never steer our credentials elsewhere.
"""

from __future__ import annotations

import json
import random
import time
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import aiohttp
from yarl import URL

from jobtrail.core import outcomes as o
from jobtrail.core.lookup import MISSING, find, header
from jobtrail.core.model import AttemptKind, Capabilities, Operation, ResultSummary, evolve
from jobtrail.core.redact import Redactor
from jobtrail.core.states import RemoteStatus
from jobtrail.errors import JobtrailError
from jobtrail.providers import lookup, parse, pathvalues, reading, scanning
from jobtrail.providers.authorize import Authorizer, NoCredential
from jobtrail.providers.config import ProviderSpec
from jobtrail.providers.cookies import OperationCookies
from jobtrail.providers.placement import place, reference_value
from jobtrail.providers.protocol import Fetched, Reply
from jobtrail.providers.spec import Cookies, ResultSpec, SourceKind
from jobtrail.providers.tracing import call_span
from jobtrail.randomness import PooledSystemRandom

_ORIGINS_KEPT = 8192  # status URLs resolved and remembered (about one per operation in flight)

_KEEP_HEADERS = (
    "content-type",
    "content-length",
    "location",
    "operation-location",
    "retry-after",
    "x-request-id",
    "request-id",
    "idempotent-replayed",
    "x-checksum-sha256",
    "x-record-count",
)


@dataclass(frozen=True, kw_only=True)
class Prepared:
    method: str
    url: str
    headers: dict[str, str]
    body: bytes | None = None


class HttpProvider:
    def __init__(self, spec: ProviderSpec, session: aiohttp.ClientSession) -> None:
        self.spec, self.session = spec, session
        self.name: str = spec.name
        self.capabilities: Capabilities = spec.capabilities
        self._rand = PooledSystemRandom()
        self._auth = Authorizer(spec)
        self._base_origin = URL(spec.base_url).origin()
        self._redactors: dict[tuple[str, ...], Redactor] = {}
        self._origins: dict[tuple[str, str], str | None] = {}
        # the session keeps no cookies; only a provider file that asks gets them, per operation
        self._cookies = OperationCookies() if spec.cookies is Cookies.PER_OPERATION else None
        # answer headers kept in the record: the usual ones and those naming request ids
        named = (*spec.request_id_headers, spec.client_request_id_header or "")
        self._keep = frozenset(_KEEP_HEADERS) | {n.lower() for n in named if n}

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
        return {
            "method": prepared.method,
            "url": prepared.url,
            "headers": self._redactor().header_map(headers),
        }

    # -- making calls -----------------------------------------------------------------

    # C901: the steps of one call (credential, cookies, ids, trace, link), each one if
    async def call(self, kind: AttemptKind, op: Operation) -> Reply:  # noqa: C901
        prepared = self._prepare(kind, op)
        if isinstance(prepared, str):
            return Reply(outcome=o.Rejected(reason=prepared), detail={"error": prepared})
        auth = self.spec.auth
        try:
            credential = await self._auth.credential()
        except NoCredential as exc:
            reason = str(exc)
            return Reply(
                outcome=o.Throttled(reason=reason), detail={"error": reason, "sent": False}
            )
        if auth is not None and credential is not None:
            prepared.headers[auth.header] = credential
        limit = (
            self.spec.result.max_bytes
            if kind is AttemptKind.RESULT
            else (self.spec.max_response_bytes)
        )
        attributes = {
            "jobtrail.operation_id": op.operation_id,
            "jobtrail.call": kind.value,
            "http.request.method": prepared.method,
        }
        cookies = self._cookies
        if cookies is not None:
            cookie = cookies.header(op.operation_id, prepared.url)
            if cookie:
                prepared.headers["Cookie"] = cookie
        client_request_id = self.spec.client_request_id_header
        if client_request_id is not None:
            # Azure's x-ms-client-request-id, recorded with each call's outcome: the value the
            # submitter gave, on every call of the operation (azure-core re-sends the
            # create's on every poll), else a fresh UUID per call
            given = header(op.request.headers, client_request_id)
            for name in [n for n in prepared.headers if n.lower() == client_request_id.lower()]:
                del prepared.headers[name]
            prepared.headers[client_request_id] = given or _uuid4(self._rand)
        with call_span(f"jobtrail.{kind.value}", op.trace_id, attributes, self._rand) as parent:
            prepared.headers["traceparent"] = parent
            reply = await self._send(kind, prepared, limit, op.operation_id, via=self._via(op))
            if auth is not None and credential is not None and reply.detail.get("status") == 401:
                reply = await self._after_401(kind, prepared, reply, limit, op)
            if kind is AttemptKind.RECONCILE and self.spec.listing and self.spec.listing.match:
                reply = await self._scanned(prepared, reply, op)
            followed = reply.detail.get("result_from") == "status"
            if (
                kind is AttemptKind.RESULT
                and self.spec.result.link
                and reply.fetched
                and not followed
            ):
                reply = await self._follow_link(prepared, reply, limit, op.operation_id)
            if client_request_id is not None:
                reply.detail["client_request_id"] = prepared.headers[client_request_id]
            return reply

    async def _scanned(self, first: Prepared, reply: Reply, op: Operation) -> Reply:
        """The listing paged through from its first page, within the scan's bounds."""
        assert self.spec.listing is not None

        async def page(url: str) -> Reply:
            again = Prepared(method="GET", url=url, headers=first.headers)
            limit = self.spec.max_response_bytes
            return await self._send(AttemptKind.RECONCILE, again, limit, op.operation_id)

        return await scanning.scan(reply, first.url, self.spec.listing, op.created_at, page)

    async def _after_401(
        self, kind: AttemptKind, prepared: Prepared, refused: Reply, limit: int, op: Operation
    ) -> Reply:
        """A fetched token answered 401: sent once more with a fresh one when that is safe
        (authorize.py); the first answer is kept in the detail."""
        auth = self.spec.auth
        assert auth is not None
        fresh = await self._auth.after_refusal(kind, prepared.headers[auth.header])
        if fresh is None:
            return refused
        prepared.headers[auth.header] = fresh
        reply = await self._send(kind, prepared, limit, op.operation_id, via=self._via(op))
        first = {k: v for k, v in refused.detail.items() if k in ("status", "elapsed_ms")}
        reply.detail["refused_token"] = {**first, "then": "sent again with a fresh token"}
        return reply

    async def _follow_link(self, first: Prepared, reply: Reply, limit: int, op_id: str) -> Reply:
        """The status answer names the result (a URL, or an id for `{link}` in the result
        path): fetch it there, on the provider's origin only."""
        assert reply.fetched is not None
        document, _ = parse.read_json(reply.fetched.content)
        rule = self.spec.result
        values = [v for v in (find(document, f) for f in rule.link) if v]
        values = [v for v in values if isinstance(v, str)][: len(rule.link) if rule.merge else 1]
        if not values:
            reason = f"the status answer names no result at `{'` or `'.join(rule.link)}`"
            return Reply(outcome=o.ResultMissing(reason=reason), detail=reply.detail)
        fetched = [await self._linked(first, reply, value, limit, op_id) for value in values]
        failed = next((f for f in fetched if f.fetched is None), None)
        if failed is not None or len(fetched) == 1:
            return failed or fetched[0]
        # the files make one result, line by line (OpenAI's output and error files)
        parts = [f.fetched.content for f in fetched if f.fetched is not None]
        content = b"".join(p if p.endswith(b"\n") else p + b"\n" for p in parts if p)
        if len(content) > limit:
            return Reply(outcome=_too_big(limit), detail=fetched[0].detail)
        merged = self._result(200, {}, content, {"merged": [f.detail for f in fetched]})
        assert merged.fetched is not None
        first_fetched = fetched[0].fetched
        assert first_fetched is not None
        return Reply(
            outcome=merged.outcome,
            detail={**merged.detail, "linked_from": reply.detail},
            fetched=evolve(
                merged.fetched,
                content_type=first_fetched.content_type,
                request_id=first_fetched.request_id,
            ),
        )

    async def _linked(
        self, first: Prepared, reply: Reply, value: str, limit: int, op_id: str
    ) -> Reply:
        """The result a status answer names by `value` (a URL, or an id for `{link}`)."""
        rule = self.spec.result
        if rule.path and "{link}" in rule.path:
            # an id, or a resource name of safe segments (Gemini's `files/abc`)
            unsafe = parse.unsafe_name(value)
            encoded = "/".join(quote(part, safe="") for part in value.split("/"))
            url = None if unsafe else self.spec.base_url + rule.path.replace("{link}", encoded)
        else:
            url = reading.same_origin(self.spec.base_url, first.url, value)
        if url is None:
            reason = f"the result link {value[:100]!r} is not on the provider's origin"
            return Reply(outcome=o.ResultMissing(reason=reason), detail=reply.detail)
        headers = dict(first.headers, Accept=rule.content_type or "*/*")
        second = Prepared(method="GET", url=url, headers=headers)
        fetched = await self._send(AttemptKind.RESULT, second, limit, op_id, linked=True)
        return Reply(
            outcome=fetched.outcome,
            detail={**fetched.detail, "linked_from": reply.detail},
            fetched=fetched.fetched,
        )

    # C901: the transport's failures translated once, at the edge (httpx's map_httpcore_exceptions)
    async def _send(  # noqa: C901
        self,
        kind: AttemptKind,
        req: Prepared,
        limit: int,
        operation_id: str,
        *,
        linked: bool = False,
        via: str | None = None,
    ) -> Reply:
        started = time.monotonic()
        what = kind.value
        try:
            async with self.session.request(
                req.method,
                req.url,
                headers=req.headers,
                data=req.body,
                allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=self.spec.timeout.total_seconds()),
            ) as response:
                status, headers = response.status, dict(response.headers)
                if self._cookies is not None:
                    self._cookies.remember(operation_id, response)
                body = await _read_bounded(response, limit)
        except TimeoutError:
            seconds = self.spec.timeout.total_seconds()
            return self._failed(
                o.Ambiguous(reason=f"no {what} answer within {seconds:g}s"), started
            )
        except aiohttp.ClientConnectorError as exc:
            why = exc.os_error.strerror or type(exc).__name__
            reason = f"could not connect to {req.url.split('/')[2]} ({why}); nothing was sent"
            return self._failed(o.Throttled(reason=reason), started, sent=False)
        except aiohttp.ClientError as exc:
            reason = f"the {what} call broke off after sending ({type(exc).__name__})"
            return self._failed(o.Ambiguous(reason=reason), started)
        detail = self._detail(status, headers, body, started)
        if body is None:
            if kind is AttemptKind.RESULT:
                return Reply(outcome=_too_big(limit), detail=detail)
            reason = f"the {what} answer is larger than the {limit}-byte limit"
            return Reply(outcome=o.Ambiguous(reason=reason, http_status=status), detail=detail)
        rule = self.spec.result
        if kind is AttemptKind.RESULT and not linked and (rule.source != "path" or rule.link):
            return self._result_in_status(status, headers, body, detail)
        reply = self._read(kind, status, headers, body, detail, req.url, operation_id, via)
        if isinstance(reply.outcome, o.Ambiguous) and reply.outcome.unreadable:
            detail["error"] = reply.outcome.reason  # why the kept answer says no state
        if kind is not AttemptKind.RESULT and _may_say_why(status, reply.outcome):
            # read only when there is a failure to explain: a running poll parses once
            failure = parse.provider_error(self.spec, status, body)
            if failure is not None:
                detail["provider_error"] = self._redactor().json(failure)
        return reply

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
        spec = self.spec
        match kind:
            case AttemptKind.CREATE:
                outcome = parse.parse_create(spec, status, headers, body, url)
                return Reply(outcome=outcome, detail=detail)
            case AttemptKind.STATUS:
                outcome = parse.parse_status(spec, status, headers, body, via)
                return Reply(outcome=outcome, detail=detail)
            case AttemptKind.CANCEL:
                return Reply(outcome=parse.parse_cancel(spec, status, headers, body), detail=detail)
            case AttemptKind.RECONCILE:
                if spec.lookup is not None:
                    found = lookup.parse_lookup(spec.lookup, spec, status, headers, body)
                    return Reply(outcome=found, detail=detail)
                assert spec.listing is not None
                if spec.listing.match is not None:  # a scan, page by page (scanning.py)
                    scanned, page = scanning.read_page(
                        spec.listing, spec, status, headers, body, reference=operation_id
                    )
                    if page is not None:
                        detail["page"] = page.to_json()
                    return Reply(outcome=scanned, detail=detail)
                outcome = lookup.parse_list(
                    spec.listing, spec, status, headers, body, reference=operation_id
                )
                return Reply(outcome=outcome, detail=detail)
        reply = self._result(status, headers, body, detail)
        rule = spec.result
        narrows = rule.field and rule.source == "path" and not rule.link  # the GET of `path`
        return self._narrowed(reply) if narrows and reply.fetched else reply

    def _narrowed(self, reply: Reply) -> Reply:
        """A `from = "path"` result narrowed to its `field` (an Airflow XCom entry's `value`)."""
        assert reply.fetched is not None
        field = self.spec.result.field
        assert field is not None
        document, problem = parse.read_json(reply.fetched.content)
        part = MISSING if problem is not None else find(document, field, MISSING)
        if part is MISSING:
            reason = f"the result answer holds no result at `{field}`"
            status = reply.fetched.http_status
            return Reply(
                outcome=o.ResultMissing(reason=reason, http_status=status), detail=reply.detail
            )
        content = json.dumps(part, ensure_ascii=False).encode("utf-8")
        fetched = evolve(reply.fetched, content=content, content_type="application/json")
        return Reply(outcome=None, detail=reply.detail, fetched=fetched)

    def _result_in_status(
        self, status: int, headers: dict[str, str], body: bytes, detail: dict[str, Any]
    ) -> Reply:
        """The result is the last status answer, or one of its fields (Google's `response`);
        with `link`, that answer names where the result is (followed by `call`), and with
        `from = "status"` too, the field is the result when it names no link (Gemini's
        inlined responses, or a `responsesFile`)."""
        reply = self._result(status, headers, body, detail, items=False)
        rule = self.spec.result
        if reply.fetched is None:
            return reply
        document, problem = parse.read_json(body)
        named = problem is None and any(_named(find(document, p)) for p in rule.link)
        if named or (rule.link and rule.source == "path"):
            return reply
        detail["result_from"] = "status"
        field = rule.field
        part = find(document, field, MISSING) if problem is None and field is not None else document
        if problem is not None or part is MISSING:
            where = f"at `{field}`" if field else "as JSON"
            reason = f"the final status answer holds no result {where}"
            return Reply(outcome=o.ResultMissing(reason=reason, http_status=status), detail=detail)
        content = json.dumps(part, ensure_ascii=False).encode("utf-8")
        fetched = evolve(
            reply.fetched, content=content, content_type="application/json", jsonl=False
        )
        return Reply(outcome=None, detail=detail, fetched=fetched)

    def _result(
        self,
        status: int,
        headers: dict[str, str],
        body: bytes,
        detail: dict[str, Any],
        *,
        items: bool = True,  # False: a status answer, whose body holds no result lines
    ) -> Reply:
        req = parse.request_id(self.spec, headers)
        if status in (404, 410):
            reason = f"the result is gone (HTTP {status})"
            return Reply(outcome=o.ResultMissing(reason=reason, http_status=status), detail=detail)
        if status == 202:
            # Accepted is not done: a 202 is never a result (a monitor asked again may have
            # started over); ask again later
            reason = "the result is not ready yet (HTTP 202)"
            return Reply(
                outcome=o.Throttled(reason=reason, http_status=status, request_id=req),
                detail=detail,
            )
        if not 200 <= status < 300:
            failed = parse.error_outcome(status, headers, body, what="result", req=req)
            outcome: o.CallOutcome = failed
            if isinstance(failed, o.Rejected) and status in (409, 425):
                # Not ready yet: the provider says so; ask again later.
                outcome = o.Throttled(reason=failed.reason, http_status=status, request_id=req)
            elif isinstance(failed, o.Rejected):
                outcome = o.ResultMissing(reason=failed.reason, http_status=status)
            return Reply(outcome=outcome, detail=detail)
        rule = self.spec.result
        count = header(headers, rule.count_header) if rule.count_header else None
        lines = rule.items if items else None
        if rule.jsonl and lines is not None:
            errors, failed_items = reading.item_errors(
                body, ref=lines.ref, status=lines.status, success=lines.success
            )
            if errors:
                detail["item_errors"] = self._redactor().json(
                    {"failed": failed_items, "first": errors}
                )
        fetched = Fetched(
            content=body,
            content_type=header(headers, "Content-Type") or _json_type(body, rule),
            checksum=header(headers, rule.checksum_header) if rule.checksum_header else None,
            record_count=int(count)
            if count and count.strip().isascii() and count.strip().isdigit()
            else None,
            http_status=status,
            request_id=req,
        )
        return Reply(outcome=None, detail=detail, fetched=fetched)

    def _failed(
        self, outcome: o.Ambiguous | o.Throttled, started: float, *, sent: bool = True
    ) -> Reply:
        elapsed = round((time.monotonic() - started) * 1000, 1)
        detail: dict[str, Any] = {"error": outcome.reason, "elapsed_ms": elapsed}
        if not sent:  # stopped before any byte left: the timeline must not say "sent"
            detail["sent"] = False
        return Reply(outcome=outcome, detail=detail)

    def _detail(
        self, status: int, headers: dict[str, str], body: bytes | None, started: float
    ) -> dict[str, Any]:
        redactor = self._redactor()
        kept = {k: v for k, v in headers.items() if k.lower() in self._keep}
        detail: dict[str, Any] = {
            "status": status,
            "elapsed_ms": round((time.monotonic() - started) * 1000, 1),
            "headers": redactor.header_map(kept),
        }
        if body is not None:
            detail["body"] = _excerpt(body, redactor)
        return detail


async def _read_bounded(response: aiohttp.ClientResponse, limit: int) -> bytes | None:
    """The body, or None if it is larger than `limit` (read no further than that)."""
    length = response.content_length
    if length is not None:
        return None if length > limit else await response.read()
    chunks, size = [], 0
    async for chunk in response.content.iter_chunked(1 << 16):
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _json_type(body: bytes, rule: ResultSpec) -> str | None:
    """The media type of a result answered without a Content-Type: JSON, when the file
    expects JSON and the body is JSON (azure-core reads such an answer; one with another
    declared type is still checked against the file)."""
    wanted = (rule.content_type or "").split(";")[0].strip().lower()
    if wanted != "application/json" or not body.strip():
        return None
    _, problem = parse.read_json(body)
    return wanted if problem is None else None


def _named(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _uuid4(rand: random.Random) -> str:
    return str(uuid.UUID(bytes=rand.randbytes(16), version=4))


def _excerpt(body: bytes, redactor: Redactor) -> Any:
    """What we keep of an answer: small JSON redacted, otherwise a short text prefix."""
    if len(body) <= 4096:
        document, problem = parse.read_json(body)
        if problem is None:
            return redactor.json(document)
    text = body[:300].decode("utf-8", errors="replace")
    return {"text": redactor.text(text), "bytes": len(body)}


def _too_big(limit: int) -> o.ResultChecked:
    return o.ResultChecked(
        summary=ResultSummary(valid=False, problems=(f"the result is larger than {limit} bytes",))
    )


def _may_say_why(status: int, outcome: o.CallOutcome | None) -> bool:
    if not 200 <= status < 300:
        return True
    remote = getattr(outcome, "remote_status", None)
    return remote in (RemoteStatus.FAILED, RemoteStatus.CANCELLED)


class _Unsendable(JobtrailError):
    """A request that must not be sent; the message says why (never leaves this module)."""
