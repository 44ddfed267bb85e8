"""The provider file's keys for the conventions of real long-running APIs: where a create
answer names the job and its status URL, how each status code is read, where the state,
the error and the result are (docs/providers.md, "Conventions")."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from jobtrail.core.states import RemoteStatus
from jobtrail.errors import ProviderConfigError
from jobtrail.providers.file.keys import (
    CreateKeys,
    PlacementKeys,
    RequestIdKeys,
    ResultKeys,
    StatusKeys,
)
from jobtrail.providers.file.spec import Placement, Reading, Source, SourceKind, StateRule

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


def create_rule(create: CreateKeys, ignore_case: bool) -> StateRule:
    return StateRule(
        paths=create.state,
        codes=codes(create.codes or {}, "create.codes"),
        **missing(create.missing, "create.missing"),
        ignore_case=ignore_case,
    )


def status_rule(status: StatusKeys) -> StateRule:
    return StateRule(
        paths=status.state,
        codes=codes(status.codes or {}, "status.codes"),
        **missing(status.missing, "status.missing"),
        done=status.done,
        error=status.error,
        cancelled_codes=tuple(str(c) for c in status.cancelled_codes),
        ignore_case=status.ignore_case,
        follow=status.follow,
        cancelled_count=status.cancelled_count or None,
    )


def status_by_header(status: StatusKeys, base: StateRule) -> dict[str, StateRule]:
    """`[status.by_header.Location]`: how a monitor named by that answer header answers,
    keyed by the header's lowercased name. Each table replaces `state`, `missing` or
    `error` of the [status] rule, adds to its `codes`, and keeps the rest (case, `done`,
    `follow`)."""
    rules = {}
    for name, table in (status.by_header or {}).items():
        where = f"status.by_header.{name}"
        if not name.strip():
            raise ProviderConfigError(f"{where} must be a table such as {{ codes = {{...}} }}")
        changed: dict[str, Any] = {"answer_is_result": table.answer_is_result}
        if table.state is not None:
            changed["paths"] = table.state
        if table.codes is not None:
            changed["codes"] = {**base.codes, **codes(table.codes, f"{where}.codes")}
        if table.missing is not None:
            changed.update(missing(table.missing, f"{where}.missing"))
        if table.error is not None:
            changed["error"] = table.error
        rules[name.lower()] = replace(base, **changed)
    return rules


def placement(table: PlacementKeys | None, where: str, *, method: str) -> Placement | None:
    if table is None or table == PlacementKeys():
        return None
    natural = table.natural
    given = [k for k in ("header", "field", "query") if getattr(table, k) is not None]
    if len(given) + natural != 1:
        raise ProviderConfigError(
            f"{where} needs exactly one of `header`, `field`, `query` or `natural = true`"
        )
    if natural and (where != "create.idempotency" or method not in ("PUT", "DELETE")):
        raise ProviderConfigError(
            f"{where}: natural idempotency belongs to a PUT or DELETE create on a "
            f"client-chosen resource URL, not to {method}"
        )
    if natural and table.format != "text":
        raise ProviderConfigError(
            f'{where}.format must be "text" (the value as is) or "uuid" (a UUID derived '
            "from it, for APIs that insist on one), and only where a value is sent"
        )
    return Placement(
        header=table.header,
        field=table.field,
        query=table.query,
        natural=natural,
        uuid=table.format == "uuid",
    )


def request_ids(table: RequestIdKeys | None) -> dict[str, Any]:
    """The [request_ids] table, as ProviderSpec arguments: which answer headers name the
    provider's request id, and which header carries a fresh UUID of ours on every call."""
    found: dict[str, Any] = {"client_request_id_header": None}
    if table is None:
        return found
    if table.read is not None:
        found["request_id_headers"] = table.read
    if table.send is not None and not table.send:
        raise ProviderConfigError("request_ids.send must name a header")
    found["client_request_id_header"] = table.send
    return found


def result_keys(result: ResultKeys) -> dict[str, Any]:
    """The convention keys of [result], as ResultSpec arguments."""
    source, fmt, link, field = result.source or "path", result.format, result.link, result.field
    if result.source == "path" and not (result.path or link):
        raise ProviderConfigError("result.from = path needs result.path or result.link")
    in_status = source == "status" and isinstance(field, str)
    if result.partial and not (link or in_status):
        raise ProviderConfigError(
            "result.partial must be true or false, and needs result.link, or from = "
            '"status" with result.field: a failed or cancelled job\'s answer must name or '
            "hold its partial result"
        )
    narrows_path = source == "path" and bool(result.path) and not link
    if field is not None and (
        not field or not (narrows_path or source != "path" or result.at_create)
    ):
        raise ProviderConfigError(
            "result.field is a path into the answer that holds the result: the GET of "
            'result.path (from = "path", no link), the status answer (from = "status") or a '
            "create answer that is the result (at_create = true)"
        )
    if field is not None and narrows_path and (fmt != "json" or result.checksum_header):
        raise ProviderConfigError(
            "result.field narrows a JSON answer to one of its parts: not with "
            'format = "jsonl", nor with checksum_header (which covers the whole answer)'
        )
    if result.merge and (len(link) < 2 or fmt != "jsonl"):
        raise ProviderConfigError(
            "result.merge must be true or false, and needs two or more `link` fields and "
            'format = "jsonl": the files they name are joined line by line'
        )
    return {
        "allow_empty": result.allow_empty,
        "merge": result.merge,
        "source": source,
        "field": field,
        "link": link,
        "jsonl": fmt == "jsonl",
        "at_create": result.at_create,
        "partial": result.partial,
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


def identity(create: CreateKeys) -> tuple[Source, ...]:
    if create.identity is not None:
        return sources(create.identity, "create.identity", IDENTITY_KINDS)
    return (Source(kind=SourceKind.FIELD, name=create.job_id),)


def status_from(create: CreateKeys, status_path: str | None) -> tuple[Source, ...]:
    """Where a create answer may name the job's status URL, in order. A declared `[status]
    path` is the status URL unless the file lists places in the answer that override it
    (`status_from`): an answer header never silently replaces what the file says."""
    if create.status_from is not None:
        if create.status_url is not None:
            raise ProviderConfigError("give create.status_from or create.status_url, not both")
        found = sources(create.status_from, "create.status_from", STATUS_KINDS, may_be_empty=True)
        if not found and status_path is None:
            raise ProviderConfigError(
                "create.status_from = [] takes the status URL from no answer: declare "
                '[status] path (such as "/jobs/{job_id}") so that jobtrail knows where to ask'
            )
        return found
    if status_path is not None and create.status_url is None:
        return ()
    headers = (Source(kind=SourceKind.HEADER, name=h) for h in ("Operation-Location", "Location"))
    field = create.status_url or "status_url"
    return (*headers, Source(kind=SourceKind.FIELD, name=field))
