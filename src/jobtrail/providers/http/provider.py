"""The generic HTTP provider: a provider file turned into calls, over aiohttp.

Credentials are read from the environment at call time and exist only in the outgoing
request; what we record is the sanitized description (`describe`) and sanitized response
metadata. Redirects are not followed and status URLs pointing at another origin are not
used, so a provider's answer can never steer our credentials elsewhere.
"""

from __future__ import annotations

import random
import time
import uuid
from dataclasses import replace
from functools import partial
from urllib.parse import quote

import aiohttp
from yarl import URL

from jobtrail.core import outcomes as o
from jobtrail.core.classify import Failed, Sent, classify
from jobtrail.core.lookup import find, header
from jobtrail.core.model import AttemptKind, Operation, evolve
from jobtrail.providers.http import parse, reading, scanning
from jobtrail.providers.http.answer import HttpAnswers, _may_say_why, _read_bounded, _too_big
from jobtrail.providers.http.authorize import NoCredential
from jobtrail.providers.http.request import Prepared
from jobtrail.providers.protocol import Repeated, Reply
from jobtrail.providers.tracing import call_span

__all__ = ["HttpProvider", "Prepared"]


class HttpProvider(HttpAnswers):
    """A provider file's calls: requests (httprequest.py) sent, answers (httpanswer.py) read."""

    # C901: the steps of one call (credential, cookies, ids, trace, link), each one if
    async def call(  # noqa: C901
        self, kind: AttemptKind, op: Operation, *, previous: bytes | None = None
    ) -> Reply:
        """The call's answer; for a status read whose answer's identity is `previous` (the
        last answer the caller read for `op`), a `Repeated` reply, nothing decoded."""
        prepared = self._prepare(kind, op)
        if isinstance(prepared, str):
            return Reply(outcome=o.Rejected(reason=prepared), detail={"error": prepared})
        auth = self.spec.auth
        try:
            credential = await self._auth.credential()
        except NoCredential as exc:
            reason = str(exc)
            outcome = classify(kind, Failed(sent=Sent.NO, reason=reason))
            return Reply(outcome=outcome, detail={"error": reason, "sent": False})
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
            via = self._via(op)
            reply = await self._send(
                kind, prepared, limit, op.operation_id, via=via, previous=previous
            )
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
        # the second request is recorded by its path (a query may carry a signature)
        where = {"fetched_from": URL(url).path}
        return Reply(
            outcome=fetched.outcome,
            detail={**fetched.detail, **where, "linked_from": reply.detail},
            fetched=fetched.fetched,
        )

    # the transport's failures translated once, at the edge (httpx's map_httpcore_exceptions)
    async def _send(
        self,
        kind: AttemptKind,
        req: Prepared,
        limit: int,
        operation_id: str,
        *,
        linked: bool = False,
        via: str | None = None,
        previous: bytes | None = None,
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
            reason = f"no {what} answer within {self.spec.timeout.total_seconds():g}s"
            return self._failed(kind, Failed(sent=Sent.NO_ANSWER, reason=reason), started)
        except aiohttp.ClientConnectorError as exc:
            why = exc.os_error.strerror or type(exc).__name__
            reason = f"could not connect to {req.url.split('/')[2]} ({why}); nothing was sent"
            return self._failed(kind, Failed(sent=Sent.NO, reason=reason), started)
        except aiohttp.ClientError as exc:
            reason = f"the {what} call broke off after sending ({type(exc).__name__})"
            return self._failed(kind, Failed(sent=Sent.NO_ANSWER, reason=reason), started)
        answer = None
        if kind is AttemptKind.STATUS and body is not None:
            answer = self._identity(status, headers, body)
        answered = partial(
            self._answered,
            kind,
            req,
            limit,
            operation_id,
            linked,
            via,
            status,
            headers,
            body,
            started=started,
            answer=answer,
        )
        if answer is not None and answer == previous:
            # read before: not decoded, redacted or judged (unless the caller asks `in_full`)
            elapsed = round((time.monotonic() - started) * 1000, 1)
            request_id = parse.request_id(self.spec, headers)
            return Reply(
                outcome=None,
                detail={"status": status, "elapsed_ms": elapsed},
                answer=answer,
                repeated=Repeated(request_id=request_id, in_full=answered),
            )
        return answered()

    def _answered(
        self,
        kind: AttemptKind,
        req: Prepared,
        limit: int,
        operation_id: str,
        linked: bool,
        via: str | None,
        status: int,
        headers: dict[str, str],
        body: bytes | None,
        *,
        started: float,
        answer: bytes | None,
    ) -> Reply:
        """The answer read: its outcome and the sanitized detail the record keeps of it."""
        what = kind.value
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
        return reply if answer is None else replace(reply, answer=answer)


def _uuid4(rand: random.Random) -> str:
    return str(uuid.UUID(bytes=rand.randbytes(16), version=4))
