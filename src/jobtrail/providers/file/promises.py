"""What `jobtrail provider check` says about a file's conventions: which ones it uses, in
plain words, and what they change in what jobtrail can promise."""

from __future__ import annotations

import json
import os

from jobtrail.core.durations import format_duration
from jobtrail.providers.file.spec import ProviderSpec, Reading, Source, SourceKind, StateRule


# C901: one line per convention the file declares beyond the defaults
def convention_lines(spec: ProviderSpec) -> list[tuple[str, str]]:
    """One (topic, text) line per convention the file declares beyond the defaults."""
    lines: list[tuple[str, str]] = []
    identity = spec.identity
    if identity != (Source(kind=SourceKind.FIELD, name=spec.create_job_id),):
        lines.append(("job identity", _first_of(identity)))
    lines.append(("status URL", status_url_order(spec)))
    if spec.create_rule.codes:
        lines.append(("create answers", _codes(spec.create_rule) + _defaults(spec.create_rule)))
    rule = spec.status_rule
    reading = _state_reading(rule)
    if reading:
        lines.append(("state", reading))
    for header, own in sorted(spec.status_by_header.items()):
        text = _state_reading(own) or "as [status]"
        if own.answer_is_result:
            text += "; its done answer is the result, as read"
        lines.append((f"monitor named by {header}", text))
    if rule.error != ("error",):
        lines.append(
            ("failure reason", "provider code and message from " + " or ".join(rule.error))
        )
    if spec.create_placeholders:
        names = ", ".join(f"{{{n}}}" for n in spec.create_placeholders)
        lines.append(("path values", f"{names} given at submit (--path), one safe segment each"))
    ids = ProviderSpec.__dataclass_fields__["request_id_headers"].default
    if spec.request_id_headers != ids or spec.client_request_id_header:
        text = "the provider's from " + " or ".join(spec.request_id_headers)
        if spec.client_request_id_header:
            text += f"; a fresh UUID of ours in {spec.client_request_id_header} on every call"
        lines.append(("request ids", text))
    return lines


def status_url_order(spec: ProviderSpec) -> str:
    """The effective order in which a job's status URL is chosen, as `provider check` says it."""
    path = f"[status] path {spec.status_path}" if spec.status_path else None
    if not spec.status_from:
        return f"{path} (no answer header or field replaces it)"
    named = _first_of(spec.status_from) + " in the create answer"
    if path is None:
        return f"{named}; an answer that names none leaves the job without a status URL"
    return f"{named}, else {path}"


def _first_of(sources: tuple[Source, ...]) -> str:
    named = ", ".join(_source(s) for s in sources)
    return named if len(sources) == 1 else f"the first present of {named}"


def _source(source: Source) -> str:
    match source.kind:
        case SourceKind.FIELD:
            return f"body field {source.name}"
        case SourceKind.NAME:
            return f"resource name in body field {source.name}"
        case SourceKind.HEADER:
            return f"header {source.name} (same origin only)"
        case SourceKind.REQUEST:
            return "the URL the create was sent to"
    return "the status URL"


def _codes(rule: StateRule) -> str:
    words = {
        Reading.BODY: "read the body",
        Reading.DONE: "done (a failure its body states aside)",
        Reading.RUNNING: "still running",
        Reading.SUCCEEDED: "done",
        Reading.FAILED: "failed",
        Reading.CANCELLED: "cancelled",
        Reading.EXISTS: "a job exists under our key: looked up, never created again",
    }
    return ", ".join(f"{code} = {words[r]}" for code, r in sorted(rule.codes.items()))


def _state_reading(rule: StateRule) -> str:
    parts = []
    if rule.codes:
        parts.append(f"status codes ({_codes(rule)})")
    if rule.done:
        cancelled = f", error code {'/'.join(rule.cancelled_codes)} = cancelled"
        parts.append(
            f"`{rule.done}` true ends it (with an error: failed"
            + (cancelled if rule.cancelled_codes else "")
            + "; without: succeeded)"
        )
    if rule.paths != ("state",) or parts:
        parts.append("first text at " + " or ".join(f"`{p}`" for p in rule.paths))
    if rule.missing or rule.missing_by_code:
        parts.append(_defaults(rule).removeprefix("; "))
    if rule.cancelled_count:
        parts.append(f"succeeded with `{rule.cancelled_count}` above zero = cancelled")
    if rule.ignore_case:
        parts.append("words in any case")
    return "; ".join(parts)


def _defaults(rule: StateRule) -> str:
    """What an answer with no state word is read as (`missing`), or ""."""
    if rule.missing_by_code:
        by_code = ", ".join(f"{c} = {s}" for c, s in sorted(rule.missing_by_code.items()))
        return f"; no state at all: {by_code}"
    return f"; no state at all = {rule.missing}" if rule.missing else ""


def result_line(spec: ProviderSpec) -> str | None:
    """Where the result comes from, for the conventions beyond a plain result path."""
    rule = spec.result
    parts = []
    if rule.link:
        where = f"GET {rule.path} with {{link}} = " if rule.path else "GET the URL in "
        joined = " and ".join if rule.merge else " or ".join
        parts.append(where + joined(f"`{f}`" for f in rule.link) + " of the final status")
        if rule.merge:
            parts.append("the files joined line by line")
    if rule.source == "status":
        field = f"`{rule.field}` of " if rule.field else ""
        other = "when it names none, " if rule.link else ""
        parts.append(f"{other}{field}the final status answer, read once more")
    if rule.source == "path" and rule.field and rule.path and not rule.link:
        parts.append(f"GET {rule.path}, its `{rule.field}` is the result")
    if rule.at_create:
        parts.append("a create answer that says done is the result itself")
    if rule.jsonl:
        linked = "the linked file is " if rule.source == "status" and rule.link else ""
        parts.append(f"{linked}JSON Lines, one item per line")
    if rule.partial:
        parts.append("a failed or cancelled job's partial result is collected too")
    return "; ".join(parts) or None


def idempotency_note(spec: ProviderSpec) -> str | None:
    """What a declared lookup or idempotency form leaves unproven."""
    notes = []
    if spec.idempotency is not None and spec.idempotency.natural:
        notes.append(
            f"{spec.create_method} on a client-chosen URL is idempotent by nature: a retry "
            "sends the same request to the same resource"
        )
    if spec.listing is not None and spec.listing.match:
        notes.append(
            f"the lookup lists jobs and keeps those whose `{spec.listing.match}` holds the "
            "operation id: it proves a job absent only if the list reaches back to the "
            "create (one page of recent jobs)"
        )
    if spec.lookup is not None and "{idempotency_token}" in spec.lookup.path:
        codes = "/".join(str(c) for c in spec.lookup.absent)
        notes.append(
            "the job is read by our token (the provider keys it by the token), so a "
            f"{codes} proves that no job holds it, and a create sent again under the same "
            "token cannot make a second one"
        )
    return "; ".join(notes) or None


def cancel_line(spec: ProviderSpec) -> str:
    if spec.cancel_path is None:
        return "not supported: jobtrail will refuse cancel requests"
    text = f"{spec.cancel_method} {spec.cancel_path}"
    if spec.cancel_body is not None:
        text += f" with the JSON body {json.dumps(spec.cancel_body, sort_keys=True)}"
    return text


def credentials_line(spec: ProviderSpec) -> str:
    """Where the credential comes from, and how long a fetched token is kept."""
    auth = spec.auth
    if auth is None:
        return "none"
    text = f"header {auth.header} from {auth.describe()}"
    if auth.fetched:
        kept = (
            f"kept in memory for {format_duration(auth.lifetime)} at most"
            if auth.lifetime
            else "kept in memory until it expires (a JWT's exp, else 5 minutes)"
        )
        text += f", {kept}; fetched again after a 401"
    else:
        text += " (" + ("set" if os.environ.get(auth.env or "") else "NOT SET") + ")"
    return text + "; never stored"
