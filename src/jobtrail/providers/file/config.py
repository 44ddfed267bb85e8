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

from jobtrail.core.redact import DEFAULT_REDACTOR, Redactor
from jobtrail.core.schedule import POLL_DEFAULTS, Backoff, Bounds, Refusals
from jobtrail.core.states import RemoteStatus
from jobtrail.errors import InvalidInput, ProviderConfigError
from jobtrail.profiles import profile_names, shipped_profile
from jobtrail.providers.file import conventions as cv
from jobtrail.providers.file import declared, sections
from jobtrail.providers.file.keys import (
    DeadlinesKeys,
    PollKeys,
    ProviderKeys,
    ReconcileKeys,
    RedactKeys,
)
from jobtrail.providers.file.pathvalues import placeholders
from jobtrail.providers.file.schema import read
from jobtrail.providers.file.spec import (
    DEFAULT_TIMEOUT,
    Cookies,
    ListSpec,
    PollRules,
    ProviderSpec,
)

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
    f = read(ProviderKeys, doc)
    create, status, cancel, result = f.create, f.status, f.cancel, f.result
    reconcile = f.reconcile or ReconcileKeys()
    base_url = f.base_url.rstrip("/")
    if not base_url.startswith(("http://", "https://")):
        raise ProviderConfigError(f"base_url must start with http:// or https://, not {base_url!r}")
    headers = f.headers or {}
    for header in headers:
        if DEFAULT_REDACTOR.is_sensitive_header(header):
            raise ProviderConfigError(
                f"header {header!r} carries a credential; name its environment variable "
                "in `auth` instead of writing it in the file"
            )
    auth = sections.auth(f.auth) if f.auth else None
    method = create.method.upper()
    idempotency = cv.placement(create.idempotency, "create.idempotency", method=method)
    client_reference = cv.placement(
        create.client_reference, "create.client_reference", method=method
    )
    listing = reconcile.list
    if reconcile.same_token and idempotency is None:
        raise ProviderConfigError(
            "reconcile.same_token needs create.idempotency (a header or field for the token)"
        )
    if listing and client_reference is None:
        raise ProviderConfigError(
            "reconcile.list needs create.client_reference, so the job can be found by it"
        )
    if listing and reconcile.lookup:
        raise ProviderConfigError("declare one lookup: reconcile.list or reconcile.lookup")
    lookup = (
        sections.lookup(
            reconcile.lookup,
            idempotency=idempotency is not None and not idempotency.natural,
            client_reference=client_reference is not None,
            create_path=create.path,
        )
        if reconcile.lookup
        else None
    )
    status_rule = cv.status_rule(status)
    create_rule = cv.create_rule(create, status_rule.ignore_case)
    sections.check_exists(create_rule.codes, reconcile.same_token, bool(listing or lookup))
    submitted = sections.path_values(f, placeholders(create.path, "create.path"))
    cancel_method = cancel.method.upper() if cancel else "POST"
    redact = f.redact or RedactKeys()
    deadlines = f.deadlines or DeadlinesKeys()
    timeout = f.timeout or DEFAULT_TIMEOUT
    if reconcile.token_kept is not None and not reconcile.same_token:
        raise ProviderConfigError("reconcile.token_kept needs reconcile.same_token = true")
    return ProviderSpec(
        name=f.name,
        base_url=base_url,
        document=doc,
        auth=auth,
        trace_header=f.trace_header,
        **cv.request_ids(f.request_ids),
        timeout=timeout,
        max_response_bytes=f.max_response_bytes,
        headers={str(k): str(v) for k, v in headers.items()},
        cookies=Cookies(f.cookies),
        create_method=method,
        create_path=create.path,
        create_placeholders=submitted,
        idempotency=idempotency,
        client_reference=client_reference,
        create_job_id=create.job_id,
        status_path=cv.template(status.path, "status.path"),
        status_progress=status.progress,
        status_updated_at=status.updated_at,
        identity=cv.identity(create),
        status_from=cv.status_from(create, status.path),
        create_rule=create_rule,
        status_rule=status_rule,
        status_by_header=cv.status_by_header(status, status_rule),
        states=_states(f.states or {}),
        cancel_method=cancel_method,
        cancel_path=cv.template(cancel.path, "cancel.path") if cancel else None,
        cancel_body=sections.cancel_body(cancel, cancel_method),
        result=sections.result_table(result, create.result),
        same_token=reconcile.same_token,
        listing=ListSpec(
            path=listing.path,
            items=listing.items,
            job_id=listing.job_id,
            match=listing.match,
            visible_within=listing.visible_within,
            **declared.scan(listing, timeout),
        )
        if listing
        else None,
        lookup=lookup,
        census=declared.census(
            f.census,
            timeout,
            token=idempotency is not None,
            reference=client_reference is not None,
            submitted=submitted,
        ),
        webhooks=f.webhooks,
        deadlines={
            "create": deadlines.create,
            "result": deadlines.result,
            "cancel": deadlines.cancel,
        },
        poll=poll_rules(f.poll or PollKeys()),
        remote_deadline=declared.remote_deadline(create.deadline),
        usage=declared.usage(status.usage),
        token_kept=declared.token_kept(reconcile.token_kept, deadlines.create),
        redactor=Redactor().extended(
            headers=[*redact.headers, *([auth.header] if auth else [])],
            fields=redact.fields,
        ),
    )


def poll_rules(table: dict[str, Any] | PollKeys) -> PollRules:
    """The [poll] table, checked: backoff, the floor and ceiling of every wait, and what
    refused status reads lead to. `min` defaults to 1 s (or to a faster `initial`); `max`
    to 1 h (or to a longer `cap`)."""
    poll = read(PollKeys, table, "poll") if isinstance(table, dict) else table

    def seconds(value: timedelta | None, default: float) -> float:
        return default if value is None else value.total_seconds()

    defaults = POLL_DEFAULTS
    initial, cap = seconds(poll.initial, defaults.initial), seconds(poll.cap, defaults.cap)
    floor = seconds(poll.min, min(defaults.min, initial))
    ceiling = seconds(poll.max, max(defaults.max, cap))
    if floor < defaults.lowest_min:
        raise ProviderConfigError(
            f"poll.min must be at least {defaults.lowest_min * 1000:g}ms, or a provider answering "
            "Retry-After: 0 could make jobtrail spin"
        )
    if not floor <= cap <= ceiling:
        raise ProviderConfigError(
            f"[poll] needs min <= cap <= max (got min {floor:g}s, cap {cap:g}s, max {ceiling:g}s)"
        )
    limit = defaults.max_refused_reads if poll.max_refused_reads is None else poll.max_refused_reads
    if limit < 1:
        raise ProviderConfigError(
            f"poll.max_refused_reads must be a whole number >= 1, not {limit!r}"
        )
    return PollRules(
        backoff=Backoff(base=initial, cap=cap),
        bounds=Bounds(floor=floor, ceiling=ceiling),
        refusals=Refusals(
            not_found_grace=seconds(poll.not_found_grace, defaults.not_found_grace), limit=limit
        ),
    )


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
