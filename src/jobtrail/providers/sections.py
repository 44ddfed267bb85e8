"""Parts of a provider file checked beyond the schema of config.py: where the credential
comes from (`auth`), a cancel's body, a lookup by one of our keys (`[reconcile] lookup`),
a create answer that says "already exists" and the placeholders of every path."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from jobtrail.core.durations import parse_duration
from jobtrail.errors import InvalidInput, ProviderConfigError
from jobtrail.providers.spec import Auth, LookupSpec, Placement, Reading

AUTH_KEYS = frozenset({"header", "env", "prefix", "command", "file", "lifetime", "timeout"})
LOOKUP_KEYS = frozenset({"path", "job_id", "absent", "visible_within"})
# placeholders jobtrail fills in every path but the create path: the job, once known, and
# the operation's own keys
_JOB = ("job_id", "job_url")
_KEYS = ("operation_id", "idempotency_token", "client_reference")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


# C901: each of auth's forms (env, command, file) checked where it is read
def auth(table: dict[str, Any]) -> Auth:  # noqa: C901
    """`auth = { header, env | command | file, prefix, lifetime, timeout }`."""
    if "value" in table or "token" in table:
        raise ProviderConfigError(
            'auth must name an environment variable (env = "NAME"), a token command or a '
            "token file, never hold the secret"
        )
    unknown = sorted(set(table) - AUTH_KEYS)
    if unknown:
        known = ", ".join(sorted(AUTH_KEYS))
        raise ProviderConfigError(f"unknown key {unknown[0]!r} in auth; known keys: {known}")
    given = [k for k in ("env", "command", "file") if k in table]
    if "header" not in table or len(given) != 1:
        raise ProviderConfigError(
            "auth needs `header` and exactly one of `env` (a variable holding the credential), "
            '`command` (a program that prints a token: ["gcloud", "auth", '
            '"print-access-token"]) or `file` (a file holding one)'
        )
    command = table.get("command", [])
    if "command" in table and (
        not isinstance(command, list)
        or not command
        or not all(isinstance(part, str) and part for part in command)
    ):
        raise ProviderConfigError(
            "auth.command must be a list of arguments, the program first "
            '(["az", "account", "get-access-token", "--query", "accessToken", "-o", "tsv"]); '
            "it runs without a shell"
        )
    for key in ("header", "env", "prefix", "file"):
        if key in table and not isinstance(table[key], str):
            raise ProviderConfigError(f"auth.{key} must be text, got {table[key]!r}")
    fetched = "command" in table or "file" in table
    if not fetched and ("lifetime" in table or "timeout" in table):
        raise ProviderConfigError(
            "auth.lifetime and auth.timeout belong to a token command or token file"
        )
    if "timeout" in table and "command" not in table:
        raise ProviderConfigError("auth.timeout is the longest a token command may run")
    lifetime = _duration(table, "lifetime")
    timeout = _duration(table, "timeout") or timedelta(seconds=30)
    if lifetime is not None and lifetime < timedelta(seconds=1):
        raise ProviderConfigError("auth.lifetime must be at least 1s")
    if not timedelta(seconds=1) <= timeout <= timedelta(minutes=5):
        raise ProviderConfigError("auth.timeout must be between 1s and 5m")
    return Auth(
        header=table["header"],
        env=table.get("env"),
        prefix=table.get("prefix", ""),
        command=tuple(command),
        file=table.get("file"),
        lifetime=lifetime,
        timeout=timeout,
    )


def _duration(table: dict[str, Any], key: str) -> timedelta | None:
    if key not in table:
        return None
    try:
        return parse_duration(table[key])
    except InvalidInput as exc:
        raise ProviderConfigError(f"auth.{key}: {exc}") from None


def cancel_body(cancel: dict[str, Any] | None, method: str) -> Any:
    """`[cancel] body`: a table sent as the cancel's JSON body (Airflow's PATCH of a DAG run
    with `{ state = "failed" }`); None when there is none."""
    if cancel is None or "body" not in cancel:
        return None
    body = cancel["body"]
    if not isinstance(body, dict) or not body:
        raise ProviderConfigError(
            '[cancel] body must be a table, sent as JSON: body = { state = "failed" }'
        )
    if method in ("GET", "HEAD"):
        raise ProviderConfigError(f"[cancel] body cannot go with method {method}")
    return body


def lookup(
    table: Any, *, idempotency: bool, client_reference: bool, create_path: str = ""
) -> LookupSpec:
    """`[reconcile] lookup = { path, job_id, absent }`: GET `path`, which names the job by
    our idempotency token or operation id; a 2xx answer names the job at `job_id`, a code
    in `absent` (default [404]) says there is none. A key the create path itself holds (a
    client-chosen resource, `PUT /things/{operation_id}`) is sent by the create, so it may
    name the job too."""
    if not isinstance(table, dict):
        raise ProviderConfigError(
            'reconcile.lookup must be a table: { path = ".../{idempotency_token}", job_id = ... }'
        )
    unknown = sorted(set(table) - LOOKUP_KEYS)
    if unknown:
        known = ", ".join(sorted(LOOKUP_KEYS))
        raise ProviderConfigError(
            f"unknown key {unknown[0]!r} in reconcile.lookup; known keys: {known}"
        )
    path, job_id = table.get("path"), table.get("job_id", "job_id")
    if not isinstance(path, str) or not isinstance(job_id, str) or not job_id:
        raise ProviderConfigError("reconcile.lookup needs `path` (and `job_id`) as text")
    names = set(_PLACEHOLDER.findall(path))
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
    absent = table.get("absent", [404])
    if (
        not isinstance(absent, list)
        or not absent
        or not all(isinstance(c, int) and not isinstance(c, bool) for c in absent)
        or not all(c in (404, 410) for c in absent)
    ):
        raise ProviderConfigError(
            "reconcile.lookup.absent lists the codes that prove no job exists: 404 and/or 410"
        )
    window = table.get("visible_within", "5m")
    if window != "never" and not isinstance(window, str):
        raise ProviderConfigError(
            'reconcile.lookup.visible_within must be a duration such as "30s", or "never"'
        )
    try:
        visible = None if window == "never" else parse_duration(window)
    except InvalidInput as exc:
        raise ProviderConfigError(f"reconcile.lookup.visible_within: {exc}") from None
    return LookupSpec(path=path, job_id=job_id, absent=tuple(absent), visible_within=visible)


def reconcile_lookup(
    reconcile: dict[str, Any],
    listing: dict[str, Any],
    idempotency: Placement | None,
    client_reference: Placement | None,
    create_path: str = "",
) -> LookupSpec | None:
    """The [reconcile] table's `lookup`, if declared (one lookup at most)."""
    if "lookup" not in reconcile:
        return None
    if listing:
        raise ProviderConfigError("declare one lookup: reconcile.list or reconcile.lookup")
    return lookup(
        reconcile["lookup"],
        idempotency=idempotency is not None and not idempotency.natural,
        client_reference=client_reference is not None,
        create_path=create_path,
    )


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


def path_values(doc: dict[str, Any], create: tuple[str, ...]) -> tuple[str, ...]:
    """The values given at submit: the create path's placeholders, then the names listed in
    `path_values` for the other paths (Airflow's `{task_id}`, whose XCom is the result)."""
    extra = doc.get("path_values", [])
    if not isinstance(extra, list) or not all(isinstance(n, str) for n in extra):
        raise ProviderConfigError('path_values must be a list of names: ["task_id"]')
    names = list(create)
    for name in extra:
        if not _NAME.fullmatch(name) or name in (*_JOB, *_KEYS, "link"):
            raise ProviderConfigError(
                f"path_values: {name!r} is not a name a submitter can fill (letters, digits "
                "and _, not a placeholder jobtrail fills)"
            )
        used = any(f"{{{name}}}" in (template or "") for _, template in _templates(doc))
        if not used:
            raise ProviderConfigError(f"path_values: {{{name}}} appears in no path")
        if name not in names:
            names.append(name)
    return tuple(names)


def _templates(doc: dict[str, Any]) -> list[tuple[str, str | None]]:
    """(where, template) for every path but the create path."""

    def at(table: str, *keys: str) -> Any:
        node: Any = doc.get(table)
        for key in keys:
            node = node.get(key) if isinstance(node, dict) else None
        return node if isinstance(node, str) else None

    return [
        ("status.path", at("status", "path")),
        ("cancel.path", at("cancel", "path")),
        ("result.path", at("result", "path")),
        ("reconcile.list.path", at("reconcile", "list", "path")),
        ("reconcile.lookup.path", at("reconcile", "lookup", "path")),
    ]


def check_paths(doc: dict[str, Any], submitted: tuple[str, ...]) -> None:
    """Every path template of a provider document holds only placeholders jobtrail fills:
    the job, the operation's keys, the values given at submit (and `{link}` for results)."""
    for where, template in _templates(doc):
        check_placeholders(template, where, submitted, link=where == "result.path")


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
