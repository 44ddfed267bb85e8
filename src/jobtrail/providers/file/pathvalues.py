"""Values given at submit for the placeholders of a create path (`{group}`, `{name}`): the
resource URL a client chooses, as in Azure Resource Manager's PUT
`.../resourceGroups/{group}/providers/.../{name}`.

Each value is one URL path segment, checked before anything is stored and percent-encoded
where it is used, so a value can never address another resource (`..`, `/`) or split the
request (CR, LF). The values are part of the request: stored with it and fingerprinted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import quote

from jobtrail.errors import InvalidInput, ProviderConfigError
from jobtrail.providers.http.parse import unsafe_segment

# placeholders jobtrail fills itself; a path value may not take their names
RESERVED = frozenset(
    {"job_id", "job_url", "operation_id", "idempotency_token", "client_reference", "link"}
)
MAX_VALUE_LENGTH = 256
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def placeholders(template: str, where: str) -> tuple[str, ...]:
    """The names a submitter fills in `template` (a create path), in order of appearance."""
    names: list[str] = []
    for name in _PLACEHOLDER.findall(template):
        if name in ("job_id", "job_url", "link"):
            raise ProviderConfigError(
                f"{where}: {{{name}}} names a job or its result, which a create cannot know"
            )
        if name in RESERVED:
            continue
        if not _NAME.fullmatch(name):
            raise ProviderConfigError(
                f"{where}: {{{name}}} is not a placeholder name (letters, digits and _)"
            )
        if name not in names:
            names.append(name)
    return tuple(names)


def checked(expected: tuple[str, ...], given: Mapping[str, str] | None) -> dict[str, str]:
    """The submitter's values for `expected`, each one a safe path segment; InvalidInput
    names the first one missing, unknown or unsafe."""
    values = dict(given or {})
    unknown = sorted(set(values) - set(expected))
    if unknown:
        known = ", ".join(expected) or "none"
        raise InvalidInput(
            f"the provider's paths have no placeholder {{{unknown[0]}}}; theirs: {known}"
        )
    missing = [name for name in expected if name not in values]
    if missing:
        raise InvalidInput(
            f"the provider needs a value for {{{missing[0]}}}: give it as "
            f"--path {missing[0]}=VALUE (or path={{'{missing[0]}': ...}})"
        )
    for name, value in values.items():
        if not isinstance(value, str) or len(value) > MAX_VALUE_LENGTH:
            raise InvalidInput(f"the path value {name} must be text of at most 256 characters")
        unsafe = unsafe_segment(value)
        if unsafe is not None:
            raise InvalidInput(
                f"the path value {name}={value[:80]!r} {unsafe}: it must be one URL path segment"
            )
    return values


def fill(template: str, values: Mapping[str, str]) -> str:
    """`template` with each submitted value percent-encoded in its place."""
    for name, value in values.items():
        template = template.replace(f"{{{name}}}", quote(value, safe=""))
    return template
