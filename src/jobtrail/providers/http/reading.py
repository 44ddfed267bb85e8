"""Reading the conventions of real long-running APIs out of an answer. Pure functions.

A state may come from the HTTP status code, from one of several fields, from Google's
`done` boolean with `error` or `response`, or be declared for an answer that has none; a
job may be named by a body field, by a URL in a header, or by the URL the create was sent
to; a failure carries the provider's own code and message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from yarl import URL

from jobtrail.core.lookup import find, header
from jobtrail.core.outcomes import Basis
from jobtrail.core.states import RemoteStatus
from jobtrail.providers.file.spec import Reading, Source, SourceKind, StateRule

MAX_ERROR_TEXT = 500
_NUMBER = re.compile(r"-?\d{1,18}(\.\d{1,9})?")
_READ: dict[Reading, RemoteStatus] = {
    Reading.RUNNING: RemoteStatus.RUNNING,
    Reading.SUCCEEDED: RemoteStatus.SUCCEEDED,
    Reading.FAILED: RemoteStatus.FAILED,
    Reading.CANCELLED: RemoteStatus.CANCELLED,
}
_ABSENT = object()


def word_status(states: Mapping[str, RemoteStatus], word: str, ignore_case: bool) -> RemoteStatus:
    if word in states:
        return states[word]
    if ignore_case:
        lowered = word.casefold()
        for known, status in states.items():
            if known.casefold() == lowered:
                return status
    return RemoteStatus.UNKNOWN


# C901: the reading order the docs state: a declared code, `done`, a word, `missing`
def read_state(  # noqa: C901
    rule: StateRule,
    states: Mapping[str, RemoteStatus],
    http_status: int,
    document: Any,
) -> tuple[str | None, RemoteStatus, Basis]:
    """(provider word, what it means, what gave it). What was read, not what it proves:
    core/evidence.py judges that (an empty body read by `missing` states nothing there).

    A declared status code wins over the body; then Google's `done`; then the first state
    path holding text; then the state declared for an answer without one."""
    word = next((v for v in (find(document, p) for p in rule.paths) if isinstance(v, str)), None)
    reading = rule.codes.get(http_status)
    if reading is Reading.DONE:
        ended = word_status(states, word, rule.ignore_case) if word is not None else None
        if ended in (RemoteStatus.FAILED, RemoteStatus.CANCELLED):
            return word, ended, Basis.WORD
        return word or f"HTTP {http_status}", RemoteStatus.SUCCEEDED, Basis.CODE
    if reading is not None and reading is not Reading.BODY:
        return word or f"HTTP {http_status}", _READ[reading], Basis.CODE
    if rule.done is not None:
        done = find(document, rule.done)
        if done is True:
            failure = error_of(rule, document)
            if failure is None:
                return word or "done", RemoteStatus.SUCCEEDED, Basis.FLAG
            if str(failure.get("code")) in rule.cancelled_codes:
                return word or "done: cancelled", RemoteStatus.CANCELLED, Basis.FLAG
            return word or "done: error", RemoteStatus.FAILED, Basis.FLAG
        if done is False or (done is None and isinstance(document, Mapping)):
            # AIP-151: `done` is omitted (false) while the operation runs
            return word or "not done", RemoteStatus.RUNNING, Basis.FLAG
    if word is not None:
        return word, word_status(states, word, rule.ignore_case), Basis.WORD
    default = rule.missing_by_code.get(http_status, rule.missing)
    if default is not None:
        return None, default, Basis.DEFAULT
    return None, RemoteStatus.UNKNOWN, Basis.NONE


def error_of(rule: StateRule, document: Any) -> dict[str, Any] | None:
    """The provider's own account of a failure: `{"code", "message"}` (and `count` for a
    list of errors), from `error.code`/`error.message`, `errors[]` or a bare text."""
    for path in rule.error:
        value = find(document, path)
        if isinstance(value, Mapping) and isinstance(value.get("data"), list):
            value = value["data"]  # OpenAI batches: errors = {"object": "list", "data": [...]}
        if isinstance(value, list):
            if not value:
                continue
            first = error_text(value[0])
            if first is not None:
                return first | ({"count": len(value)} if len(value) > 1 else {})
            continue
        found = error_text(value)
        if found is not None:
            return found
    return None


# Where providers put the words of a failure, tried in order (RFC 9457 `detail`, OAuth's
# `error_description`, and the common short forms)
_MESSAGE_KEYS = ("message", "detail", "error_description", "description", "msg", "reason")


def error_text(value: Any) -> dict[str, Any] | None:
    if isinstance(value, str) and value:
        return {"message": value[:MAX_ERROR_TEXT]}
    if not isinstance(value, Mapping) or not value:
        return None
    found: dict[str, Any] = {}
    for key in ("code", "type", "status"):
        code = value.get(key)
        if isinstance(code, str | int) and not isinstance(code, bool) and "code" not in found:
            found["code"] = str(code)[:100]
    for key in _MESSAGE_KEYS:
        message = value.get(key)
        if isinstance(message, str) and message:
            found["message"] = message[:MAX_ERROR_TEXT]
            break
    if isinstance(value.get("error"), Mapping):  # {"error": {...}} envelopes, Anthropic's too
        inner = error_text(value["error"])
        if inner is not None:
            # the inner account first; a message beside the envelope is kept where it has none
            return {**{k: v for k, v in found.items() if k == "message"}, **inner}
    return found or None


def error_in_body(document: Any) -> dict[str, Any] | None:
    """An error answer's code and message, whatever common envelope it uses."""
    if isinstance(document, Mapping):
        word, message = document.get("error"), document.get("message")
        if isinstance(word, str) and word and isinstance(message, str) and message:
            # {"error": "invalid_request", "message": "..."}: the word beside a message is a code
            return error_text({"code": word, "message": message})
    for path in ("error", "errors"):
        found = error_of(StateRule(error=(path,)), document)
        if found is not None:
            return found
    return error_text(document) if isinstance(document, Mapping) else None


def same_origin(base_url: str, against: str, reference: str) -> str | None:
    """`reference` resolved against the URL `against` (RFC 3986), if it stays on the origin
    of `base_url` and carries no user info; otherwise None."""
    try:
        url = URL(against).join(URL(reference)).with_fragment(None)
    except ValueError:
        return None
    if url.user is not None or url.password is not None:
        return None
    if not url.absolute or url.origin() != URL(base_url).origin():
        return None
    return str(url)


def status_url_from(
    sources: tuple[Source, ...],
    headers: Mapping[str, str],
    document: Any,
    request_url: str,
    base_url: str | None = None,
) -> tuple[str | None, str | None]:
    """The first status URL the declared sources name (raw: resolved where it is used), and
    the answer header that named it (None for a body field or the create URL). With
    `base_url`, a URL off its origin (another host, user info) is passed over as if the
    answer had not named it: the next declared place is tried."""
    for source in sources:
        via = None
        if source.kind is SourceKind.HEADER:
            value, via = header(headers, source.name), source.name
        elif source.kind is SourceKind.FIELD:
            value = find(document, source.name)
        else:
            value = request_url
        if not isinstance(value, str) or not value.strip():
            continue
        if base_url is not None and same_origin(base_url, request_url, value) is None:
            continue
        return value, via
    return None, None


MAX_ITEM_ERRORS = 20


def item_errors(
    content: bytes, *, ref: tuple[str, ...], status: str, success: tuple[str, ...]
) -> tuple[list[dict[str, Any]], int]:
    """The provider's reasons for failed items of a JSON Lines batch result (Anthropic's
    `result.error`, OpenAI's `error` or `response.body.error`): the first few, and how many
    failed items there are in all."""
    found: list[dict[str, Any]] = []
    failed = 0
    for line in content.decode("utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line) if line.strip() else None
        except (ValueError, RecursionError):
            continue
        if not isinstance(row, Mapping):
            continue
        outcome = find(row, status)
        if outcome is not None and str(outcome).strip() in success:
            continue
        failed += 1
        if len(found) >= MAX_ITEM_ERRORS:
            continue
        why = next(
            (
                e
                for e in (error_in_body(find(row, p)) for p in ("result", "response.body"))
                if e is not None
            ),
            None,
        ) or error_in_body(row)
        name = next((v for v in (find(row, r) for r in ref) if v is not None), "")
        found.append({"ref": str(name)[:200], **(why or {})})
    return found, failed


def read_usage(paths: Mapping[str, str], document: Any) -> dict[str, float] | None:
    """The work done and billed an answer reports (`[status] usage`): the number at each
    declared path, by name; None when it holds none of them. Whether a number is a usable
    count (not negative, finite) is the core's to judge (core/usage.py), which records why
    it drops one."""
    if not paths:
        return None
    found: dict[str, float] = {}
    for name, path in paths.items():
        value = find(document, path)
        if isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
            value = float(value) if "." in value else int(value)  # proto3 JSON's int64
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        found[name] = value
    return found or None
