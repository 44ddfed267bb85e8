"""The generic HTTP provider's answers: an answer's status, headers and body read into the
outcome the pure core judges, and the sanitized detail the ledger records of it."""

from __future__ import annotations

import json
import time
from typing import Any

import aiohttp

from jobtrail.core import outcomes as o
from jobtrail.core.classify import Failed, Sent, classify
from jobtrail.core.lookup import MISSING, find, header
from jobtrail.core.model import AttemptKind, ResultSummary, evolve
from jobtrail.core.redact import Redactor
from jobtrail.core.states import RemoteStatus
from jobtrail.providers.file.spec import ResultSpec
from jobtrail.providers.http import lookup, parse, reading, scanning
from jobtrail.providers.http.request import HttpRequests
from jobtrail.providers.protocol import Fetched, Reply


class HttpAnswers(HttpRequests):
    """Reading answers (see httprequest.py for the requests, http.py for the calls)."""

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
            outcome = parse.error_outcome(AttemptKind.RESULT, status, headers, body, req)
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

    def _identity(self, status: int, headers: dict[str, str], body: bytes) -> bytes:
        """A status answer's identity: its status code, the headers the core acts on (a
        Retry-After, a status URL, a monitor's own header...) and its body. Two answers
        of one identity read the same: the same outcome, whatever the time."""
        acted = sorted(
            f"{k.lower()}:{v}" for k, v in headers.items() if k.lower() in self._identifying
        )
        head = "\n".join((str(status), *acted)).encode("utf-8", "surrogateescape")
        return b"%d:%b\n%b" % (len(head), head, body)

    def _failed(self, kind: AttemptKind, failed: Failed, started: float) -> Reply:
        elapsed = round((time.monotonic() - started) * 1000, 1)
        detail: dict[str, Any] = {"error": failed.reason, "elapsed_ms": elapsed}
        if failed.sent is Sent.NO:  # stopped before any byte left: the timeline must not say "sent"
            detail["sent"] = False
        return Reply(outcome=classify(kind, failed), detail=detail)

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
