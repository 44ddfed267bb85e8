"""The provider file (TOML): parsed, checked and turned into declared capabilities.

A provider file never holds a secret: credentials are named by the environment variable that
holds them and read at call time. That is why the parsed document can be stored with every
operation, so any worker on any machine can drive the operation later.
"""

from __future__ import annotations

import os
import tomllib
from datetime import timedelta
from pathlib import Path
from typing import Any

from jobtrail.core.durations import parse_duration
from jobtrail.core.redact import DEFAULT_REDACTOR, Redactor
from jobtrail.core.schedule import POLL_DEFAULTS, Backoff, Bounds, Refusals
from jobtrail.core.states import RemoteStatus
from jobtrail.errors import InvalidInput, ProviderConfigError
from jobtrail.profiles import profile_names, shipped_profile
from jobtrail.providers import conventions as cv
from jobtrail.providers import declared, sections
from jobtrail.providers.keys import check_keys
from jobtrail.providers.pathvalues import placeholders
from jobtrail.providers.reader import Reader
from jobtrail.providers.spec import (
    DEFAULT_TIMEOUT,
    DEFAULT_VISIBILITY,
    Cookies,
    ListSpec,
    PollRules,
    ProviderSpec,
)
from jobtrail.providers.tables import result_table, size, webhooks_table

__all__ = [
    "ProviderSpec",
    "find_provider",
    "find_provider_named",
    "load_provider_file",
    "load_provider_text",
    "parse_provider",
    "poll_rules",
]

DEFAULT_DEADLINES = {"create": "2m", "result": "1h", "cancel": "10m"}


def load_provider_file(path: str | Path) -> ProviderSpec:
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ProviderConfigError(f"no provider file at {file}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ProviderConfigError(f"cannot read the provider file {file}: {exc}") from None
    return load_provider_text(text, str(file))


def load_provider_text(text: str, where: str) -> ProviderSpec:
    """Parse a provider file's text; ``base_url_env``, when that variable is set, replaces
    ``base_url`` now, so the stored document names the URL the operation really used."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProviderConfigError(f"{where} is not valid TOML: {exc}") from None
    variable = document.get("base_url_env")
    if isinstance(variable, str) and os.environ.get(variable):
        document["base_url"] = os.environ[variable]
    try:
        return parse_provider(document)
    except ProviderConfigError as exc:
        raise ProviderConfigError(f"{where}: {exc}") from None


def find_provider(name_or_path: str, search: str | None = None) -> ProviderSpec:
    """A provider file given as a path, or a name looked up in JOBTRAIL_PROVIDERS or
    ./providers/ as NAME.toml."""
    candidate = Path(name_or_path)
    if candidate.suffix == ".toml" or "/" in name_or_path or os.sep in name_or_path:
        return load_provider_file(candidate)
    return find_provider_named(name_or_path, search)


def find_provider_named(name: str, search: str | None = None) -> ProviderSpec:
    """A provider by NAME only: NAME.toml in JOBTRAIL_PROVIDERS or ./providers/, else the
    profile of that name shipped in the package (`jobtrail provider list`)."""
    if not name or not all(c.isalnum() or c in "-_" for c in name):
        raise ProviderConfigError(f"{name!r} is not a provider name (letters, digits, - and _)")
    name_or_path = name
    folder = Path(search or os.environ.get("JOBTRAIL_PROVIDERS") or "providers")
    file = folder / f"{name_or_path}.toml"
    if not file.is_file():
        shipped = shipped_profile(name)
        if shipped is not None:
            return load_provider_text(shipped.text, f"the shipped profile {name!r}")
        raise ProviderConfigError(
            f"no provider named '{name_or_path}': looked for {file} and the shipped profiles "
            f"({', '.join(profile_names())}); pass a provider file path or set "
            "JOBTRAIL_PROVIDERS to the folder holding NAME.toml files"
        )
    return load_provider_file(file)


def parse_provider(doc: dict[str, Any]) -> ProviderSpec:
    """Check a provider document and build its spec; every mistake is a ProviderConfigError."""
    try:
        return _parse(doc)
    except ProviderConfigError:
        raise
    except InvalidInput as exc:
        raise ProviderConfigError(str(exc)) from None


def _parse(doc: dict[str, Any]) -> ProviderSpec:
    check_keys(doc)
    r = Reader(doc, "")
    name, base_url = r.text("name"), r.text("base_url").rstrip("/")
    r.text("base_url_env", None)  # only its type is checked here; load_provider_text uses it
    if not base_url.startswith(("http://", "https://")):
        raise ProviderConfigError(f"base_url must start with http:// or https://, not {base_url!r}")
    headers = r.table("headers")
    for header in headers:
        if DEFAULT_REDACTOR.is_sensitive_header(header):
            raise ProviderConfigError(
                f"header {header!r} carries a credential; name its environment variable "
                "in `auth` instead of writing it in the file"
            )
    create, status, cancel = r.sub("create"), r.sub("status"), r.sub("cancel", optional=True)
    result, reconcile = r.sub("result", optional=True), r.sub("reconcile", optional=True)
    auth = sections.auth(r.table("auth")) if "auth" in doc else None
    method = create.text("method", "POST").upper()
    idempotency = cv.placement(create.table("idempotency"), "create.idempotency", method=method)
    client_reference = cv.placement(
        create.table("client_reference"), "create.client_reference", method=method
    )
    same_token = reconcile.flag("same_token") if reconcile else False
    listing = reconcile.table("list") if reconcile else {}
    if same_token and idempotency is None:
        raise ProviderConfigError(
            "reconcile.same_token needs create.idempotency (a header or field for the token)"
        )
    if listing and client_reference is None:
        raise ProviderConfigError(
            "reconcile.list needs create.client_reference, so the job can be found by it"
        )
    if listing and set(listing) - cv.LIST_KEYS:
        unknown = sorted(set(listing) - cv.LIST_KEYS)[0]
        known = ", ".join(sorted(cv.LIST_KEYS))
        raise ProviderConfigError(f"unknown key {unknown!r} in reconcile.list; known keys: {known}")
    lookup = sections.reconcile_lookup(
        reconcile.doc if reconcile else {},
        listing,
        idempotency,
        client_reference,
        create.text("path"),
    )
    status_rule = cv.status_rule(status.doc)
    create_rule = cv.create_rule(create.doc, status_rule.ignore_case)
    sections.check_exists(create_rule.codes, same_token, bool(listing or lookup))
    submitted = sections.path_values(doc, placeholders(create.text("path"), "create.path"))
    sections.check_paths(doc, submitted)
    cancel_method = cancel.text("method", "POST").upper() if cancel else "POST"
    redact = r.table("redact")
    deadlines = {
        k: parse_duration(v) for k, v in (DEFAULT_DEADLINES | r.table("deadlines")).items()
    }
    unknown = set(deadlines) - set(DEFAULT_DEADLINES)
    if unknown:
        raise ProviderConfigError(
            f"unknown deadlines {sorted(unknown)}; use create, result, cancel"
        )
    poll = poll_rules(r.table("poll"))
    timeout = parse_duration(doc["timeout"]) if "timeout" in doc else DEFAULT_TIMEOUT
    if reconcile and "token_kept" in reconcile.doc and not same_token:
        raise ProviderConfigError("reconcile.token_kept needs reconcile.same_token = true")
    return ProviderSpec(
        name=name,
        base_url=base_url,
        document=doc,
        auth=auth,
        trace_header=r.text("trace_header", None),
        **cv.request_ids(r.table("request_ids")),
        timeout=timeout,
        max_response_bytes=size(doc.get("max_response_bytes", "1MB")),
        headers={str(k): str(v) for k, v in headers.items()},
        cookies=_cookies(doc.get("cookies", Cookies.IGNORE.value)),
        create_method=method,
        create_path=create.text("path"),
        create_placeholders=submitted,
        idempotency=idempotency,
        client_reference=client_reference,
        create_job_id=create.text("job_id", "job_id"),
        create_state=create.doc.get("state") if isinstance(create.doc.get("state"), str) else None,
        create_status_url=create.text("status_url", "status_url"),
        status_path=cv.template(status.text("path", None), "status.path"),
        status_state=status_rule.paths[0],
        status_progress=status.text("progress", None),
        status_updated_at=status.text("updated_at", None),
        status_error=status_rule.error[0],
        identity=cv.identity(create.doc),
        status_from=cv.status_from(create.doc, status.text("path", None)),
        create_rule=create_rule,
        status_rule=status_rule,
        status_by_header=cv.status_by_header(status.doc, status_rule),
        states=_states(r.table("states")),
        cancel_method=cancel_method,
        cancel_path=cv.template(cancel.text("path"), "cancel.path") if cancel else None,
        cancel_body=sections.cancel_body(cancel.doc if cancel else None, cancel_method),
        result=result_table(result, create.text("result", None)),
        same_token=same_token,
        listing=ListSpec(
            path=str(listing["path"]),
            items=str(listing.get("items", "data")),
            job_id=str(listing.get("job_id", "job_id")),
            match=str(listing["match"]) if "match" in listing else None,
            visible_within=_visibility(listing.get("visible_within")),
            **declared.scan(listing, timeout),
        )
        if listing
        else None,
        lookup=lookup,
        webhooks=webhooks_table(r.table("webhooks")) if "webhooks" in doc else None,
        deadlines=deadlines,
        poll=poll,
        remote_deadline=declared.remote_deadline(create.doc.get("deadline")),
        usage=declared.usage(status.doc.get("usage")),
        token_kept=declared.token_kept(
            reconcile.doc.get("token_kept") if reconcile else None, deadlines["create"]
        ),
        redactor=Redactor().extended(
            headers=[*redact.get("headers", ()), *([auth.header] if auth else [])],
            fields=redact.get("fields", ()),
        ),
    )


def _visibility(value: Any) -> timedelta | None:
    """`reconcile.list.visible_within`: how soon a new job shows in the lookup ("60s"), or
    "never" (a miss proves nothing); the conservative default when the file says nothing."""
    if value is None:
        return DEFAULT_VISIBILITY
    if value == "never":
        return None
    if not isinstance(value, str):
        raise ProviderConfigError(
            'reconcile.list.visible_within must be a duration such as "60s", or "never"'
        )
    return parse_duration(value)


def poll_rules(table: dict[str, Any]) -> PollRules:
    """The [poll] table, checked: backoff, the floor and ceiling of every wait, and what
    refused status reads lead to. `min` defaults to 1 s (or to a faster `initial`); `max`
    to 1 h (or to a longer `cap`)."""

    def seconds(key: str, default: float) -> float:
        if key not in table:
            return default
        return parse_duration(table[key]).total_seconds()

    defaults = POLL_DEFAULTS
    initial, cap = seconds("initial", defaults.initial), seconds("cap", defaults.cap)
    floor = seconds("min", min(defaults.min, initial))
    ceiling = seconds("max", max(defaults.max, cap))
    if floor < defaults.lowest_min:
        raise ProviderConfigError(
            f"poll.min must be at least {defaults.lowest_min * 1000:g}ms, or a provider answering "
            "Retry-After: 0 could make jobtrail spin"
        )
    if not floor <= cap <= ceiling:
        raise ProviderConfigError(
            f"[poll] needs min <= cap <= max (got min {floor:g}s, cap {cap:g}s, max {ceiling:g}s)"
        )
    limit = table.get("max_refused_reads", defaults.max_refused_reads)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ProviderConfigError(
            f"poll.max_refused_reads must be a whole number >= 1, not {limit!r}"
        )
    return PollRules(
        backoff=Backoff(base=initial, cap=cap),
        bounds=Bounds(floor=floor, ceiling=ceiling),
        refusals=Refusals(
            not_found_grace=seconds("not_found_grace", defaults.not_found_grace), limit=limit
        ),
    )


def _cookies(value: Any) -> Cookies:
    try:
        return Cookies(value)
    except ValueError:
        choices = " or ".join(f'"{c.value}"' for c in Cookies)
        raise ProviderConfigError(f"cookies must be {choices}, not {value!r}") from None


def _states(table: dict[str, Any]) -> dict[str, RemoteStatus]:
    states = {}
    for word, meaning in table.items():
        try:
            states[str(word)] = RemoteStatus(str(meaning))
        except ValueError:
            raise ProviderConfigError(
                f"states.{word} = {meaning!r}: map each provider word to running, succeeded, "
                "failed or cancelled"
            ) from None
    return states
