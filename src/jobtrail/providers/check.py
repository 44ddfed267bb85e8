"""What `jobtrail provider check` says of a provider, one (topic, words) line at a time: the
same path for a provider file and a code provider. The promises come from the declared
capabilities and core/proof.py; a provider file adds what its records say of each call
(providers/file/promises.py), a code provider what it declares beside its capabilities. The CLI
only prints the lines."""

from __future__ import annotations

import os

from jobtrail.core.durations import format_duration
from jobtrail.core.proof import absence_rule, at_most_once_rule, takeover_rule
from jobtrail.providers.code.contract import CodeSpec
from jobtrail.providers.file import baseurl, promises
from jobtrail.providers.file.declared import declared_lines
from jobtrail.providers.file.spec import ProviderSpec

Lines = list[tuple[str, str]]

_NO_LOOKUP = (
    "none declared: after a lost create answer, a refused retry (409 already exists, 400, "
    "422) or retries unreadable until the create deadline stop for a human (needs_human), "
    "since only a lookup can prove nothing was created"
)


def check_lines(spec: ProviderSpec | CodeSpec) -> Lines:
    """The provider's declared capabilities, and what jobtrail can promise with them."""
    caps = spec.capabilities
    file = spec if isinstance(spec, ProviderSpec) else None
    means = _means(spec)
    lines = _calls(file) if file else [_code_idempotency(spec)]
    lines.append(("reconciliation", ", ".join(means) or "none"))
    note = promises.idempotency_note(file) if file else None
    if note:
        lines.append(("reconciliation note", note))
    if caps.same_token_retry and not caps.lookup:
        lines.append(("lookup", _NO_LOOKUP))
    lines.append(("at-most-once create", at_most_once_rule(caps, means)))
    absence = absence_rule(caps, spec.deadlines["create"])
    if absence is not None and (caps.at_most_once_provable or not file):
        lines.append(("proof of absence", absence))
    if file and (takeover := takeover_rule(caps, spec.deadlines["create"], file.timeout)):
        lines.append(("takeover", takeover))
    lines += _code_lines(spec) if isinstance(spec, CodeSpec) else _file_lines(spec)
    lines.append(
        (
            "deadlines",
            ", ".join(f"{name} {format_duration(v)}" for name, v in spec.deadlines.items()),
        )
    )
    if isinstance(spec, CodeSpec):
        poll = ", ".join(f"{k} {v}" for k, v in sorted(spec.poll.items()))
        lines += [("poll", poll or "defaults"), ("call timeout", format_duration(spec.timeout))]
    usage = file.usage if file else None
    if isinstance(spec, CodeSpec):
        census = spec.census
    else:
        census = spec.census.sees() if spec.census else None
    return lines + declared_lines(
        caps, spec.deadlines["create"], spec.remote_deadline, usage, census
    )


def _means(spec: ProviderSpec | CodeSpec) -> list[str]:
    """The reconciliation means declared, in words."""
    caps = spec.capabilities
    if isinstance(spec, CodeSpec):
        return [
            what
            for what, declared in (
                ("same-token retry", caps.same_token_retry),
                ("lookup by client reference", caps.list_by_reference),
                ("status by client id", caps.status_by_client_id),
            )
            if declared
        ]
    means = ["same-token retry"] if caps.same_token_retry else []
    if spec.listing:
        means.append(f"lookup by client reference ({spec.listing.path})")
    if spec.lookup:
        means.append(f"lookup by our key (GET {spec.lookup.path})")
    return means


def _calls(spec: ProviderSpec) -> Lines:
    """The create call, and where the token and the operation id go in it."""
    idem = spec.idempotency
    lines = [("create", f"{spec.create_method} {spec.create_path}")]
    if idem is None:
        lines.append(("idempotency", "none: the provider cannot recognise a repeated create"))
    else:
        said = idem.describe()
        lines.append(("idempotency", said if idem.natural else f"token sent in {said}"))
    if spec.client_reference is not None:
        said = spec.client_reference.describe()
        lines.append(("client reference", f"operation id sent in {said}"))
    return lines


def _code_idempotency(spec: ProviderSpec | CodeSpec) -> tuple[str, str]:
    idem = spec.capabilities.idempotency.value
    return ("idempotency", f"{idem} (the provider places the token itself)")


def _file_lines(spec: ProviderSpec) -> Lines:
    """What the file says of the cancel, the result, its conventions and its credentials."""
    result, special = spec.result, promises.result_line(spec)
    if result.path or special:
        checks = [
            c
            for c in (
                result.content_type and f"content type {result.content_type}",
                result.checksum_header and f"checksum header {result.checksum_header}",
                result.checksum_field and f"checksum field {result.checksum_field}",
                result.count_header and f"record count {result.count_header}",
                result.schema is not None and "JSON schema",
                result.items and "per-item outcomes",
            )
            if c
        ]
        where = special or f"GET {result.path}"
        said = f"{where}; checked: {', '.join(checks) or 'nothing'}"
    elif result.inline_field:
        said = f"inline in the create answer (field {result.inline_field})"
    else:
        said = "none declared: success is the remote terminal state alone"
    hooks = spec.webhooks
    return [
        ("cancel", promises.cancel_line(spec)),
        ("result", said),
        *promises.convention_lines(spec),
        (
            "webhooks",
            f"{hooks.signing} signatures, secret from ${hooks.secret_env}"
            if hooks
            else "none: polling only",
        ),
        ("credentials", promises.credentials_line(spec)),
        ("environment", "; ".join(baseurl.environment(spec)) or "nothing"),
    ]


def _code_lines(spec: CodeSpec) -> Lines:
    """What a code provider declares beside its capabilities."""
    caps = spec.capabilities
    secrets = [f"${n} ({'set' if os.environ.get(n) else 'NOT SET'})" for n in spec.secret_env]
    return [
        ("cancel", "supported" if caps.cancel else "not supported: cancel requests refused"),
        ("result", f"{caps.result.value}; validated by jobtrail, never by the provider"),
        ("webhooks", "declared" if caps.webhooks else "none: polling only"),
        ("settings", ", ".join(sorted(spec.settings)) or "none"),
        ("secrets", (", ".join(secrets) + "; never stored") if secrets else "none declared"),
    ]
