"""Reading provider answers. Pure functions of (status, headers, body): fuzzed by tests.

Whatever the body holds, the answer is an outcome with a clear reason, never an exception.
A create answer we cannot read is *ambiguous* (the provider may well have created the job),
never a rejection.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from jobtrail.core import outcomes as o
from jobtrail.core.classify import Classified, Failed, cancelled_by_count, classify
from jobtrail.core.lookup import MISSING, find, header
from jobtrail.core.model import AttemptKind
from jobtrail.core.outcomes import Basis, Body
from jobtrail.core.states import RemoteStatus
from jobtrail.providers.file.spec import ProviderSpec, Reading, SourceKind
from jobtrail.providers.http import reading as reading_

MAX_ID_LENGTH = 512
MAX_URL_LENGTH = 2048
# Characters that end or split a URL path segment: an id holding one would address
# another resource once substituted into a status, cancel or result URL.
_SEGMENT_BREAKERS = frozenset("/\\?#")


def _not_json(word: str) -> Any:
    raise ValueError(f"{word} is not JSON")


def read_json(body: bytes) -> tuple[Any, str | None]:
    """(document, None) or (None, why it is not readable JSON). NaN and Infinity, which
    Python would accept, are refused: they cannot be stored as JSON."""
    try:
        return json.loads(body.decode("utf-8"), parse_constant=_not_json), None
    except UnicodeDecodeError:
        return None, "the answer is not UTF-8 text"
    except (ValueError, RecursionError):
        return None, "the answer is not JSON"


def read_body(body: bytes) -> tuple[Any, Body]:
    """An answer's JSON document (None when it has none) and the shape of its body: what
    was read, for the core to judge (core/evidence.py)."""
    if not body.strip():
        return None, Body.ABSENT
    document, problem = read_json(body)
    if problem is not None:
        text = body.lstrip()[:1]
        return None, Body.CUT if text in (b"{", b"[") else Body.NOT_JSON
    if document is None:
        return None, Body.NULL
    if isinstance(document, Mapping):
        return document, Body.OBJECT if document else Body.EMPTY
    return document, Body.OTHER


def job_id_at(document: Any, path: str, *, slashes: bool = False) -> tuple[str | None, str | None]:
    """A job id at `path`; with `slashes`, a resource name (`operations/123`) whose every
    segment is a safe URL path segment."""
    value = find(document, path, MISSING)
    if value is MISSING or value is None:
        return None, f"the answer has no job id at `{path}`"
    if not isinstance(value, str):
        return None, f"the job id at `{path}` is {type(value).__name__}, not text"
    if not value.strip() or len(value) > MAX_ID_LENGTH or not value.isprintable():
        return None, f"the job id at `{path}` is empty, too long or not printable"
    unsafe = unsafe_name(value) if slashes else unsafe_segment(value)
    if unsafe is not None:
        return None, f"the job id at `{path}` {unsafe}"
    return value, None


def unsafe_name(value: str) -> str | None:
    """Why `value` is not a resource name of safe segments (`projects/p/operations/o`)."""
    for segment in value.split("/"):
        unsafe = unsafe_segment(segment)
        if unsafe is not None:
            return f"has a segment that {unsafe}"
    return None


def unsafe_segment(value: str) -> str | None:
    """Why `value` cannot be one URL path segment, or None. "." and ".." are removed by
    path normalization (RFC 3986 5.2.4) and "/", "\\", "?" or "#" split or end the path;
    the percent-decoded forms are checked too, since a server or proxy may decode once more.
    """
    seen = value
    for _ in range(3):
        if not seen.strip():
            return "is empty"
        if seen in (".", ".."):
            return f"is {seen!r}, which URL normalization removes"
        if not seen.isprintable():
            return "holds control characters"
        if _SEGMENT_BREAKERS.intersection(seen):
            return "holds a character that splits a URL path (/, \\, ? or #)"
        decoded = unquote(seen)
        if decoded == seen:
            return None
        seen = decoded
    return "is percent-encoded more than twice"


def remote_status(spec: ProviderSpec, word: Any) -> tuple[str | None, RemoteStatus]:
    if not isinstance(word, str):
        return None, RemoteStatus.UNKNOWN
    return word, spec.states.get(word, RemoteStatus.UNKNOWN)


def request_id(spec: ProviderSpec, headers: Mapping[str, str]) -> str | None:
    for name in spec.request_id_headers:
        value = header(headers, name)
        if value:
            return value[:200]
    return None


def error_outcome(
    kind: AttemptKind, status: int, headers: Mapping[str, str], body: bytes, req: str | None
) -> Classified:
    """A non-2xx answer, reduced to its facts for the core to judge (core/classify.py)."""
    what = "lookup" if kind is AttemptKind.RECONCILE else kind.value
    reason = f"{what} answered HTTP {status}" + _reason_suffix(body)
    retry_after = header(headers, "Retry-After")
    failed = Failed(reason=reason, http_status=status, retry_after=retry_after, request_id=req)
    return classify(kind, failed)


def exists_outcome(status: int, req: str | None) -> o.Ambiguous:
    """A create refused because a job already exists under our key (a declared
    `"409" = "exists"`): it may be ours, from an earlier attempt whose answer was lost, so
    nothing is created again; the operation goes to the declared lookup, which names it."""
    return o.Ambiguous(
        reason=(
            f"create answered HTTP {status}: a job already exists under this operation's key; "
            "it is looked up, never created again"
        ),
        http_status=status,
        request_id=req,
    )


def _reason_suffix(body: bytes) -> str:
    document, problem = read_json(body[:4096])
    if problem is None and isinstance(document, Mapping):
        for key in ("message", "error", "detail", "title"):
            value = document.get(key)
            if isinstance(value, str) and value:
                return f": {value[:200]}"
            if isinstance(value, Mapping) and isinstance(value.get("message"), str):
                return f": {value['message'][:200]}"
    return ""


def parse_create(
    spec: ProviderSpec,
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    request_url: str | None = None,
) -> o.CallOutcome:
    """A create answer. `request_url` is the URL the create was sent to: status URLs are
    resolved against it, and it is the job's identity for `identity = ["request"]`."""
    req = request_id(spec, headers)
    reading = spec.create_rule.codes.get(status)
    if reading is Reading.EXISTS:
        return exists_outcome(status, req)
    if not 200 <= status < 300 and reading is None:
        return error_outcome(AttemptKind.CREATE, status, headers, body, req)
    sent_to = request_url or spec.base_url + spec.create_path
    document, shape = read_body(body)
    if shape in (Body.CUT, Body.NOT_JSON) and reading in (None, Reading.BODY):
        problem = "the answer is JSON cut short" if shape is Body.CUT else "the answer is not JSON"
        return o.Ambiguous(
            reason=f"create answered {status} but {problem}", http_status=status, request_id=req
        )
    inline = spec.result.inline_field
    if inline is not None and find(document, inline, MISSING) is not MISSING:
        value = find(document, inline, MISSING)
        content = value.encode() if isinstance(value, str) else json.dumps(value).encode()
        job_id, _ = job_id_at(document, spec.create_job_id)
        return o.SyncResult(
            job_id=job_id,
            content=content,
            content_type="application/json",
            http_status=status,
            request_id=req,
            basis=Basis.CONTENT,
            body=shape,
        )
    status_url, via = reading_.status_url_from(
        spec.status_from, headers, document, sent_to, spec.base_url
    )
    job_id, problem = _identity(spec, headers, document, sent_to, status_url)
    if job_id is None:
        return o.Ambiguous(
            reason=f"create answered {status} but {problem}", http_status=status, request_id=req
        )
    word, mapped, basis = reading_.read_state(spec.create_rule, spec.states, status, document)
    if spec.result.at_create and mapped is RemoteStatus.SUCCEEDED:
        # The answer is the result: its field, or all of it (nothing at all reads as JSON
        # null, which the core accepts only from a code declared done without a body).
        part = document if spec.result.field is None else find(document, spec.result.field, MISSING)
        if shape is Body.ABSENT or (document is not None and part is not MISSING):
            return o.SyncResult(
                job_id=job_id,
                content=json.dumps(part, ensure_ascii=False).encode("utf-8"),
                content_type="application/json",
                http_status=status,
                request_id=req,
                status_url=status_url,
                status_via=via,
                basis=basis,
                body=shape,
            )
    return o.Accepted(
        job_id=job_id,
        remote_state=word,
        remote_status=mapped,
        status_url=status_url,
        status_via=via,
        http_status=status,
        request_id=req,
        retry_after=header(headers, "Retry-After"),
        basis=basis,
        body=shape,
    )


def _identity(
    spec: ProviderSpec,
    headers: Mapping[str, str],
    document: Any,
    sent_to: str,
    status_url: str | None,
) -> tuple[str | None, str]:
    """The job's identity from the first declared source that names one: an opaque id in a
    body field, or a URL (a header, the create URL, the status URL) on the provider's origin."""
    problems = []
    for source in spec.identity:
        if source.kind in (SourceKind.FIELD, SourceKind.NAME):
            if document is None:
                problems.append(f"the answer has no body to read `{source.name}` from")
                continue
            slashes = source.kind is SourceKind.NAME
            job_id, problem = job_id_at(document, source.name, slashes=slashes)
            if job_id is not None:
                return job_id, ""
            problems.append(problem or "")
            continue
        if source.kind is SourceKind.HEADER:
            raw = header(headers, source.name)
        elif source.kind is SourceKind.REQUEST:
            raw = sent_to
        else:
            raw = status_url
        if raw is None:
            problems.append(f"no {source}")
            continue
        url = reading_.same_origin(spec.base_url, sent_to, raw)
        if url is None or len(url) > MAX_URL_LENGTH or not url.isprintable():
            problems.append(f"the {source} URL is not on the provider's origin")
            continue
        return url, ""
    return None, "; ".join(p for p in problems if p) or "it names no job"


def parse_status(
    spec: ProviderSpec,
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    via: str | None = None,
) -> o.CallOutcome:
    """A status answer, read by the rule for the monitor the header `via` named."""
    req = request_id(spec, headers)
    rule = spec.status_rule_for(via)
    reading = rule.codes.get(status)
    if not 200 <= status < 300 and reading is None:
        return error_outcome(AttemptKind.STATUS, status, headers, body, req)
    # From here on the provider answered: what it stated (or not) is read as it is and
    # judged by the core (core/evidence.py), never guessed at here.
    document, shape = read_body(body)
    word, mapped, basis = reading_.read_state(rule, spec.states, status, document)
    if rule.cancelled_count:
        mapped = cancelled_by_count(mapped, find(document, rule.cancelled_count))
    # A monitor named by a header moves only by that header: an Azure-AsyncOperation
    # monitor's answer may carry a Location too, which names no Location monitor.
    follow = [n for n in rule.follow if via is None or n.lower() == via.lower()]
    moved = next(
        ((url, n) for url, n in ((header(headers, n), n) for n in follow) if url and url.strip()),
        None,
    )
    kept = (
        rule.answer_is_result
        and mapped is RemoteStatus.SUCCEEDED
        and shape not in (Body.CUT, Body.NOT_JSON)
    )
    progress = find(document, spec.status_progress, MISSING) if spec.status_progress else None
    updated = find(document, spec.status_updated_at, MISSING) if spec.status_updated_at else None
    return o.Observed(
        remote_state=word,
        remote_status=mapped,
        progress=None if progress is MISSING else _small(progress),
        provider_updated_at=updated if isinstance(updated, str) else None,
        retry_after=header(headers, "Retry-After"),
        http_status=status,
        request_id=req,
        status_url=moved[0] if moved else None,
        status_via=moved[1] if moved else None,
        # a done answer with no content at all (an action's 204) is the result JSON null
        content=json.dumps(document, ensure_ascii=False).encode("utf-8") if kept else None,
        partial_result=mapped in (RemoteStatus.FAILED, RemoteStatus.CANCELLED)
        and spec.result.partial
        and _names_partial(spec, document),
        basis=basis,
        body=shape,
        unread=f"no state text at `{'` or `'.join(rule.paths)}`" if basis is Basis.NONE else None,
        usage=reading_.read_usage(spec.usage, document),
    )


def _names_partial(spec: ProviderSpec, document: Any) -> bool:
    """Whether a failed or cancelled job's answer holds a partial result: a link to it, or
    (`from = "status"`) the result field itself, not empty."""
    rule = spec.result
    if any(_text(find(document, p)) for p in rule.link):
        return True
    if rule.source != "status" or rule.field is None:
        return False
    return find(document, rule.field) not in (None, "", [], {})


def provider_error(spec: ProviderSpec, status: int, body: bytes) -> dict[str, Any] | None:
    """Why the provider says a job or call failed, from its own words, for the record."""
    if not body.strip():
        return None
    document, problem = read_json(body[: 64 * 1024])
    if problem is not None:
        return None
    if 200 <= status < 300:
        return reading_.error_of(spec.status_rule, document)
    return reading_.error_in_body(document)


def parse_cancel(
    spec: ProviderSpec, status: int, headers: Mapping[str, str], body: bytes
) -> o.CallOutcome:
    req = request_id(spec, headers)
    if 200 <= status < 300:
        return o.CancelAcknowledged(http_status=status, request_id=req)
    return error_outcome(AttemptKind.CANCEL, status, headers, body, req)


def _small(value: Any) -> Any:
    """Progress is kept for people to read; cap what a provider can make us store."""
    text = json.dumps(value)
    return value if len(text) <= 2048 else {"truncated": text[:256]}


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())
