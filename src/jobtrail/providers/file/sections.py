"""Parts of a provider file checked beyond the schema of config.py: where the credential
comes from (`auth`), a cancel's body, a lookup by one of our keys (`[reconcile] lookup`),
a create answer that says "already exists", the placeholders of every path and the [result]
table."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from jobtrail.errors import ProviderConfigError
from jobtrail.providers.file import conventions as cv
from jobtrail.providers.file.keys import AuthKeys, CancelKeys, ProviderKeys, ResultKeys
from jobtrail.providers.file.spec import Auth, LookupSpec, Reading, ResultSpec

# placeholders jobtrail fills in every path but the create path: the job, once known, and
# the operation's own keys
_JOB = ("job_id", "job_url")
_KEYS = ("operation_id", "idempotency_token", "client_reference")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def auth(a: AuthKeys) -> Auth:
    """`auth = { header, env | command | file, prefix, lifetime, timeout }`."""
    given = [k for k in ("env", "command", "file") if getattr(a, k) is not None]
    if a.header is None or len(given) != 1:
        raise ProviderConfigError(
            "auth needs `header` and exactly one of `env` (a variable holding the credential), "
            '`command` (a program that prints a token: ["gcloud", "auth", '
            '"print-access-token"]) or `file` (a file holding one)'
        )
    command = a.command or []
    if a.command is not None and (
        not command or not all(isinstance(part, str) and part for part in command)
    ):
        raise ProviderConfigError(
            "auth.command must be a list of arguments, the program first "
            '(["az", "account", "get-access-token", "--query", "accessToken", "-o", "tsv"]); '
            "it runs without a shell"
        )
    if a.env is not None and (a.lifetime is not None or a.timeout is not None):
        raise ProviderConfigError(
            "auth.lifetime and auth.timeout belong to a token command or token file"
        )
    if a.timeout is not None and a.command is None:
        raise ProviderConfigError("auth.timeout is the longest a token command may run")
    timeout = a.timeout or timedelta(seconds=30)
    if a.lifetime is not None and a.lifetime < timedelta(seconds=1):
        raise ProviderConfigError("auth.lifetime must be at least 1s")
    if not timedelta(seconds=1) <= timeout <= timedelta(minutes=5):
        raise ProviderConfigError("auth.timeout must be between 1s and 5m")
    return Auth(
        header=a.header,
        env=a.env,
        prefix=a.prefix,
        command=tuple(command),
        file=a.file,
        lifetime=a.lifetime,
        timeout=timeout,
    )


def cancel_body(cancel: CancelKeys | None, method: str) -> Any:
    """`[cancel] body`: a table sent as the cancel's JSON body (Airflow's PATCH of a DAG run
    with `{ state = "failed" }`); None when there is none."""
    if cancel is None or cancel.body is None:
        return None
    if not cancel.body:
        raise ProviderConfigError(
            'cancel.body must be a table, sent as JSON: body = { state = "failed" }'
        )
    if method in ("GET", "HEAD"):
        raise ProviderConfigError(f"[cancel] body cannot go with method {method}")
    return cancel.body


def lookup(
    table: LookupSpec, *, idempotency: bool, client_reference: bool, create_path: str = ""
) -> LookupSpec:
    """`[reconcile] lookup = { path, job_id, absent }`: GET `path`, which names the job by
    our idempotency token or operation id; a 2xx answer names the job at `job_id`, a code
    in `absent` (default [404]) says there is none. A key the create path itself holds (a
    client-chosen resource, `PUT /things/{operation_id}`) is sent by the create, so it may
    name the job too."""
    if not table.job_id:
        raise ProviderConfigError("reconcile.lookup.job_id must name the job's field")
    names = set(_PLACEHOLDER.findall(table.path))
    in_path = set(_PLACEHOLDER.findall(create_path))
    if "idempotency_token" in names and not (idempotency or "idempotency_token" in in_path):
        raise ProviderConfigError(
            "reconcile.lookup: {idempotency_token} names the job only if the create sends the "
            "token: declare create.idempotency, or put {idempotency_token} in create.path"
        )
    sent = client_reference or names & in_path & {"idempotency_token", "operation_id"}
    if "operation_id" in names and not ("idempotency_token" in names or sent):
        raise ProviderConfigError(
            "reconcile.lookup: {operation_id} names the job only if the create sends it: "
            "declare create.client_reference, or put {operation_id} in create.path (a "
            "client-chosen resource such as PUT /things/{operation_id})"
        )
    if not names & set(_KEYS):
        raise ProviderConfigError(
            "reconcile.lookup.path must hold {idempotency_token} or {operation_id}: a lookup "
            "finds the job by a key of ours"
        )
    absent = table.absent
    if (
        not absent
        or not all(isinstance(c, int) and not isinstance(c, bool) for c in absent)
        or not all(c in (404, 410) for c in absent)
    ):
        raise ProviderConfigError(
            "reconcile.lookup.absent lists the codes that prove no job exists: 404 and/or 410"
        )
    return table


def check_exists(codes: Mapping[int, Reading], same_token: bool, lookup_declared: bool) -> None:
    """`[create] codes = { "409" = "exists" }`: a 4xx saying that a job exists under our key.
    It needs a lookup, the only thing that can name that job, and contradicts a same-token
    retry (which would answer the job itself)."""
    exists = [code for code, reading in codes.items() if reading is Reading.EXISTS]
    if not exists:
        return
    if any(not 400 <= code < 500 for code in exists):
        raise ProviderConfigError(
            'create.codes: "exists" is for a 4xx answer (409 Conflict, usually)'
        )
    if not lookup_declared:
        raise ProviderConfigError(
            'create.codes "exists" needs a lookup ([reconcile] lookup or list): only a lookup '
            "can name the job that already exists"
        )
    if same_token:
        raise ProviderConfigError(
            'create.codes "exists" and reconcile.same_token contradict each other: a same-token '
            'retry answers with the original job, where "exists" says it will not'
        )


def path_values(f: ProviderKeys, create: tuple[str, ...]) -> tuple[str, ...]:
    """The values given at submit: the create path's placeholders, then the names listed in
    `path_values` for the other paths (Airflow's `{task_id}`, whose XCom is the result);
    every path but the create path then holds only placeholders jobtrail fills."""
    names = list(create)
    for name in f.path_values:
        if not _NAME.fullmatch(name) or name in (*_JOB, *_KEYS, "link"):
            raise ProviderConfigError(
                f"path_values: {name!r} is not a name a submitter can fill (letters, digits "
                "and _, not a placeholder jobtrail fills)"
            )
        if not any(f"{{{name}}}" in (template or "") for _, template in _templates(f)):
            raise ProviderConfigError(f"path_values: {{{name}}} appears in no path")
        if name not in names:
            names.append(name)
    for where, template in _templates(f):
        check_placeholders(template, where, tuple(names), link=where == "result.path")
    return tuple(names)


def _templates(f: ProviderKeys) -> list[tuple[str, str | None]]:
    """(where, template) for every path but the create path."""
    listing, lookup = (f.reconcile.list, f.reconcile.lookup) if f.reconcile else (None, None)
    return [
        ("status.path", f.status.path),
        ("cancel.path", f.cancel.path if f.cancel else None),
        ("result.path", f.result.path if f.result else None),
        ("reconcile.list.path", listing.path if listing else None),
        ("reconcile.lookup.path", lookup.path if lookup else None),
    ]


def check_placeholders(
    path: str | None, where: str, submitted: tuple[str, ...], *, link: bool = False
) -> None:
    """Refuse a placeholder in `path` that nothing fills: a typo (`{jobid}`) would send the
    braces as they are, to a URL that names no job."""
    if path is None:
        return
    allowed = {*_KEYS, *submitted}
    if not where.startswith("reconcile."):
        allowed |= set(_JOB)  # the job is known once it is accepted, not while reconciling
    if link:
        allowed.add("link")
    for name in _PLACEHOLDER.findall(path):
        if name not in allowed:
            known = ", ".join(f"{{{n}}}" for n in sorted(allowed))
            raise ProviderConfigError(
                f"{where}: {{{name}}} is not a placeholder jobtrail can fill here; known: {known}"
            )


def result_table(r: ResultKeys | None, inline_field: str | None) -> ResultSpec:
    if r is None:
        return ResultSpec(inline_field=inline_field)
    _countable(r)
    return ResultSpec(
        path=r.path,
        content_type=r.content_type,
        checksum_header=r.checksum_header,
        checksum_field=r.checksum_field,
        count_header=r.count_header,
        max_bytes=r.max_bytes,
        schema=r.schema,
        items=r.items,
        expected_items_from_request=r.expected_items_from_request,
        inline_field=inline_field,
        **cv.result_keys(r),
    )


def _countable(r: ResultKeys) -> None:
    """A declared record count is checked, or the file is refused: jobtrail counts the
    records of JSON, CSV and JSON Lines results only."""
    media = (r.content_type or "").split(";")[0].strip().lower()
    if r.count_header is None or not media or r.format == "jsonl":
        return
    if media in ("application/json", "text/csv", "application/csv") or media.endswith("+json"):
        return
    raise ProviderConfigError(
        f"result.count_header: a {media} result cannot be counted, so the stated count could "
        'never be checked; jobtrail counts JSON arrays, CSV and JSON Lines (format = "jsonl")'
    )
