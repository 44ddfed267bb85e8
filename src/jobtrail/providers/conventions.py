"""The provider file's keys for the conventions of real long-running APIs: where a create
answer names the job and its status URL, how each status code is read, where the state,
the error and the result are (docs/providers.md, "Conventions")."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from jobtrail.core.states import RemoteStatus
from jobtrail.errors import ProviderConfigError
from jobtrail.providers.spec import Placement, Reading, Source, SourceKind, StateRule

CREATE_KEYS = frozenset({"identity", "status_from", "codes", "missing"})
STATUS_KEYS = frozenset(
    {
        "codes",
        "missing",
        "done",
        "cancelled_codes",
        "ignore_case",
        "follow",
        "cancelled_count",
        "by_header",
    }
)
BY_HEADER_KEYS = frozenset({"state", "codes", "missing", "error", "answer_is_result"})
RESULT_KEYS = frozenset(
    {"from", "field", "link", "format", "at_create", "partial", "merge", "allow_empty"}
)
LIST_KEYS = frozenset(
    {"path", "items", "job_id", "match", "visible_within", "pages", "within"}
    | {"next", "cursor", "more", "created"}
)
PLACEMENT_KEYS = frozenset({"header", "field", "query", "natural", "format"})
REQUEST_ID_KEYS = frozenset({"read", "send"})
RESULT_SOURCES = ("path", "status")
IDENTITY_KINDS = frozenset(SourceKind)
STATUS_KINDS = frozenset({SourceKind.FIELD, SourceKind.HEADER, SourceKind.REQUEST})


def sources(
    value: Any, where: str, kinds: frozenset[SourceKind], *, may_be_empty: bool = False
) -> tuple[Source, ...]:
    """`["header:Azure-AsyncOperation", "field:id", "request"]`: places tried in order."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or (not value and not may_be_empty):
        raise ProviderConfigError(f'{where} must be a list such as ["header:Location"]')
    found = []
    for item in value:
        kind, _, name = str(item).partition(":")
        try:
            source = Source(kind=SourceKind(kind), name=name.strip())
        except ValueError:
            source = None
        if source is None or source.kind not in kinds:
            choices = ", ".join(sorted(k.value for k in kinds))
            raise ProviderConfigError(f"{where}: {item!r} is not one of {choices}")
        needs_name = source.kind in (SourceKind.FIELD, SourceKind.HEADER, SourceKind.NAME)
        if needs_name != bool(source.name):
            raise ProviderConfigError(
                f"{where}: write {source.kind.value}:NAME for a field or header, "
                "and `request` or `status_url` alone"
            )
        found.append(source)
    return tuple(found)


def codes(value: Any, where: str) -> dict[int, Reading]:
    """`{ "202" = "running", "204" = "succeeded" }`: how an answer with each code is read."""
    if not isinstance(value, dict):
        raise ProviderConfigError(f'{where} must be a table such as {{ "202" = "running" }}')
    table = {}
    choices = ", ".join(r.value for r in Reading)
    for code, reading in value.items():
        if not str(code).isdigit() or not 200 <= int(code) <= 599:
            raise ProviderConfigError(f"{where}: {code!r} is not an HTTP status code")
        try:
            table[int(code)] = Reading(str(reading))
        except ValueError:
            raise ProviderConfigError(f"{where}.{code} must be one of {choices}") from None
        if table[int(code)] in (Reading.BODY, Reading.DONE) and int(code) >= 300:
            raise ProviderConfigError(f"{where}.{code}: only a 2xx answer's body is read")
        if table[int(code)] is Reading.EXISTS and where != "create.codes":
            raise ProviderConfigError(
                f'{where}.{code}: "exists" is what a create answer may say (a job already '
                "exists under our key), not a status"
            )
    return table


def missing(value: Any, where: str) -> dict[str, Any]:
    """`missing = "succeeded"`, or a table by status code (`{ "200" = "succeeded", "201" =
    "running" }`: a code not in it has no default): the StateRule fields it sets."""
    if value is None:
        return {"missing": None, "missing_by_code": {}}
    if isinstance(value, dict):
        by_code = {}
        for code, state in value.items():
            if not str(code).isdigit() or not 200 <= int(code) < 300:
                raise ProviderConfigError(
                    f"{where}: {code!r} is not a 2xx status code (only a 2xx answer's body is read)"
                )
            by_code[int(code)] = _missing_state(state, f"{where}.{code}", "")
        return {"missing": None, "missing_by_code": by_code}
    table = ", or a table of them by status code"
    return {"missing": _missing_state(value, where, table), "missing_by_code": {}}


def _missing_state(value: Any, where: str, alternative: str) -> RemoteStatus:
    try:
        status = RemoteStatus(str(value))
    except ValueError:
        status = RemoteStatus.UNKNOWN
    if status is RemoteStatus.UNKNOWN:
        choices = "running, succeeded, failed or cancelled"
        raise ProviderConfigError(f"{where} must be {choices}{alternative}")
    return status


def paths(value: Any, where: str) -> tuple[str, ...]:
    """One dotted path, or a list of them tried in order."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(p, str) and p for p in items):
        raise ProviderConfigError(f"{where} must be a dotted path or a list of them")
    return tuple(items)


def create_rule(create: dict[str, Any], ignore_case: bool) -> StateRule:
    state = create.get("state")
    return StateRule(
        paths=paths(state, "create.state") if state is not None else (),
        codes=codes(create.get("codes", {}), "create.codes"),
        **missing(create.get("missing"), "create.missing"),
        ignore_case=ignore_case,
    )


def status_rule(status: dict[str, Any]) -> StateRule:
    ignore_case = status.get("ignore_case", False)
    if not isinstance(ignore_case, bool):
        raise ProviderConfigError("status.ignore_case must be true or false")
    done = status.get("done")
    if done is not None and not isinstance(done, str):
        raise ProviderConfigError("status.done must be the dotted path of a boolean")
    cancelled = status.get("cancelled_codes", [])
    if not isinstance(cancelled, list):
        raise ProviderConfigError("status.cancelled_codes must be a list of error codes")
    count = status.get("cancelled_count")
    if count is not None and (not isinstance(count, str) or not count):
        raise ProviderConfigError("status.cancelled_count must be the dotted path of a number")
    return StateRule(
        paths=paths(status.get("state", "state"), "status.state"),
        codes=codes(status.get("codes", {}), "status.codes"),
        **missing(status.get("missing"), "status.missing"),
        done=done,
        error=paths(status.get("error", "error"), "status.error"),
        cancelled_codes=tuple(str(c) for c in cancelled),
        ignore_case=ignore_case,
        follow=_follow(status.get("follow", [])),
        cancelled_count=count,
    )


def status_by_header(status: dict[str, Any], base: StateRule) -> dict[str, StateRule]:
    """`[status.by_header.Location]`: how a monitor named by that answer header answers,
    keyed by the header's lowercased name. Each table replaces `state`, `missing` or
    `error` of the [status] rule, adds to its `codes`, and keeps the rest (case, `done`,
    `follow`)."""
    tables = status.get("by_header", {})
    if not isinstance(tables, dict):
        raise ProviderConfigError("status.by_header must be a table of header names")
    rules = {}
    for name, table in tables.items():
        where = f"status.by_header.{name}"
        if not isinstance(table, dict) or not str(name).strip():
            raise ProviderConfigError(f"{where} must be a table such as {{ codes = {{...}} }}")
        unknown = sorted(set(table) - BY_HEADER_KEYS)
        if unknown:
            known = ", ".join(sorted(BY_HEADER_KEYS))
            raise ProviderConfigError(f"unknown key {unknown[0]!r} in {where}; known keys: {known}")
        changed: dict[str, Any] = {}
        if "state" in table:
            changed["paths"] = paths(table["state"], f"{where}.state")
        if "codes" in table:
            changed["codes"] = {**base.codes, **codes(table["codes"], f"{where}.codes")}
        if "missing" in table:
            changed.update(missing(table["missing"], f"{where}.missing"))
        if "error" in table:
            changed["error"] = paths(table["error"], f"{where}.error")
        if not isinstance(table.get("answer_is_result", False), bool):
            raise ProviderConfigError(f"{where}.answer_is_result must be true or false")
        changed["answer_is_result"] = table.get("answer_is_result", False)
        rules[str(name).lower()] = replace(base, **changed)
    return rules


def _follow(value: Any) -> tuple[str, ...]:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        raise ProviderConfigError("status.follow must name a header, or a list of headers")
    return tuple(names)


def placement(table: dict[str, Any], where: str, *, method: str) -> Placement | None:
    if not table:
        return None
    unknown = sorted(set(table) - PLACEMENT_KEYS)
    if unknown:
        known = ", ".join(sorted(PLACEMENT_KEYS))
        raise ProviderConfigError(f"unknown key {unknown[0]!r} in {where}; known keys: {known}")
    natural = table.get("natural", False)
    if not isinstance(natural, bool):
        raise ProviderConfigError(f"{where}.natural must be true or false")
    given = [k for k in ("header", "field", "query") if k in table] + (["natural"] * natural)
    if len(given) != 1:
        raise ProviderConfigError(
            f"{where} needs exactly one of `header`, `field`, `query` or `natural = true`"
        )
    if natural and (where != "create.idempotency" or method not in ("PUT", "DELETE")):
        raise ProviderConfigError(
            f"{where}: natural idempotency belongs to a PUT or DELETE create on a "
            f"client-chosen resource URL, not to {method}"
        )
    fmt = table.get("format", "text")
    if fmt not in ("text", "uuid") or (natural and "format" in table):
        raise ProviderConfigError(
            f'{where}.format must be "text" (the value as is) or "uuid" (a UUID derived '
            "from it, for APIs that insist on one), and only where a value is sent"
        )
    return Placement(
        header=table.get("header"),
        field=table.get("field"),
        query=table.get("query"),
        natural=natural,
        uuid=fmt == "uuid",
    )


def request_ids(table: dict[str, Any]) -> dict[str, Any]:
    """The [request_ids] table, as ProviderSpec arguments: which answer headers name the
    provider's request id, and which header carries a fresh UUID of ours on every call."""
    unknown = sorted(set(table) - REQUEST_ID_KEYS)
    if unknown:
        known = ", ".join(sorted(REQUEST_ID_KEYS))
        raise ProviderConfigError(
            f"unknown key {unknown[0]!r} in [request_ids]; known keys: {known}"
        )
    found: dict[str, Any] = {}
    if "read" in table:
        names = [table["read"]] if isinstance(table["read"], str) else table["read"]
        if (
            not isinstance(names, list)
            or not names
            or not all(isinstance(n, str) and n for n in names)
        ):
            raise ProviderConfigError("request_ids.read must name a header, or a list of them")
        found["request_id_headers"] = tuple(names)
    send = table.get("send")
    if send is not None and (not isinstance(send, str) or not send):
        raise ProviderConfigError("request_ids.send must name a header")
    found["client_request_id_header"] = send
    return found


def result_keys(result: dict[str, Any]) -> dict[str, Any]:
    """The convention keys of [result], as ResultSpec arguments."""
    source = result.get("from", "path")
    if source not in RESULT_SOURCES:
        raise ProviderConfigError(f"result.from must be one of {', '.join(RESULT_SOURCES)}")
    fmt = result.get("format", "json")
    if fmt not in ("json", "jsonl"):
        raise ProviderConfigError('result.format must be "json" or "jsonl" (JSON Lines)')
    link = paths(result["link"], "result.link") if "link" in result else ()
    if source == "path" and not (result.get("path") or link) and "from" in result:
        raise ProviderConfigError("result.from = path needs result.path or result.link")
    field = result.get("field")
    at_create = result.get("at_create", False)
    if not isinstance(at_create, bool):
        raise ProviderConfigError("result.at_create must be true or false")
    partial = result.get("partial", False)
    in_status = source == "status" and isinstance(result.get("field"), str)
    if not isinstance(partial, bool) or (partial and not (link or in_status)):
        raise ProviderConfigError(
            "result.partial must be true or false, and needs result.link, or from = "
            '"status" with result.field: a failed or cancelled job\'s answer must name or '
            "hold its partial result"
        )
    narrows_path = source == "path" and bool(result.get("path")) and not link
    if field is not None and (
        not isinstance(field, str)
        or not field
        or not (narrows_path or source != "path" or at_create)
    ):
        raise ProviderConfigError(
            "result.field is a path into the answer that holds the result: the GET of "
            'result.path (from = "path", no link), the status answer (from = "status") or a '
            "create answer that is the result (at_create = true)"
        )
    if field is not None and narrows_path and (fmt != "json" or result.get("checksum_header")):
        raise ProviderConfigError(
            "result.field narrows a JSON answer to one of its parts: not with "
            'format = "jsonl", nor with checksum_header (which covers the whole answer)'
        )
    merge = result.get("merge", False)
    if not isinstance(merge, bool) or (merge and (len(link) < 2 or fmt != "jsonl")):
        raise ProviderConfigError(
            "result.merge must be true or false, and needs two or more `link` fields and "
            'format = "jsonl": the files they name are joined line by line'
        )
    allow_empty = result.get("allow_empty", False)
    if not isinstance(allow_empty, bool):
        raise ProviderConfigError("result.allow_empty must be true or false")
    return {
        "allow_empty": allow_empty,
        "merge": merge,
        "source": source,
        "field": field,
        "link": link,
        "jsonl": fmt == "jsonl",
        "at_create": at_create,
        "partial": partial,
    }


def template(path: str | None, where: str) -> str | None:
    """A URL path template, checked: `{job_url}` comes first, and what follows it (an
    action such as `:cancel` or `/cancel`) stays in the path."""
    if path is None or "{job_url}" not in path:
        return path
    suffix = path.removeprefix("{job_url}")
    if "{job_url}" in suffix or any(c in suffix for c in "?#{}") or not suffix.isprintable():
        raise ProviderConfigError(
            f"{where}: {{job_url}} starts the path, and may be followed by a path suffix "
            f"such as `:cancel` or `/cancel` (no ?, #, braces), not {path!r}"
        )
    return path


def identity(create: dict[str, Any]) -> tuple[Source, ...]:
    if "identity" in create:
        return sources(create["identity"], "create.identity", IDENTITY_KINDS)
    return (Source(kind=SourceKind.FIELD, name=str(create.get("job_id", "job_id"))),)


def status_from(create: dict[str, Any], status_path: str | None) -> tuple[Source, ...]:
    """Where a create answer may name the job's status URL, in order. A declared `[status]
    path` is the status URL unless the file lists places in the answer that override it
    (`status_from`): an answer header never silently replaces what the file says."""
    if "status_from" in create:
        if "status_url" in create:
            raise ProviderConfigError("give create.status_from or create.status_url, not both")
        found = sources(
            create["status_from"], "create.status_from", STATUS_KINDS, may_be_empty=True
        )
        if not found and status_path is None:
            raise ProviderConfigError(
                "create.status_from = [] takes the status URL from no answer: declare "
                '[status] path (such as "/jobs/{job_id}") so that jobtrail knows where to ask'
            )
        return found
    if status_path is not None and "status_url" not in create:
        return ()
    headers = (Source(kind=SourceKind.HEADER, name=h) for h in ("Operation-Location", "Location"))
    field = create.get("status_url", "status_url")
    if not isinstance(field, str):
        raise ProviderConfigError(f"create.status_url must be text, got {field!r}")
    return (*headers, Source(kind=SourceKind.FIELD, name=field))
