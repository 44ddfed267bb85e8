"""The `[notify]` table of the policy file: where notices to people go (services/notify.py
delivers them, docs/dashboard.md describes them). Pure: it checks the table and says where
the signing secret is kept; reading it is services/notify_setup.py's.

    [notify]
    endpoints = ["https://pager.example/hooks/jobtrail", "slack+https://hooks.slack.com/..."]
    secret = { env = "PAGER_WEBHOOK_SECRET" }    # or { file = "/run/secrets/jobtrail-notify" }
    dashboard_url = "https://ops.example/jobtrail"
    timeout = "10s"

The file names where the secret is and never holds it, like a provider file's `auth`: a file
is copied, committed and shown, and a secret written in one stops being one. So
`secret = "whsec_..."` is refused, and no error repeats a value it was given (a Slack
webhook's path is its secret too): errors name the key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlsplit

from jobtrail.core.durations import parse_duration
from jobtrail.errors import InvalidInput

SLACK = "slack+"
KEYS = ("endpoints", "secret", "dashboard_url", "timeout")
SHORTEST, LONGEST = timedelta(seconds=1), timedelta(minutes=5)
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_REFERENCE = 'secret = { env = "NAME" } or secret = { file = "PATH" }'


@dataclass(frozen=True, kw_only=True)
class SecretRef:
    """Where the signing secret is kept: an environment variable or a file."""

    env: str | None = None
    file: str | None = None

    @property
    def where(self) -> str:
        return f"environment variable {self.env}" if self.env else f"file {self.file}"


@dataclass(frozen=True, kw_only=True)
class NotifyFile:
    """The `[notify]` table as checked; empty when the file has none."""

    endpoints: tuple[str, ...] = ()
    secret: SecretRef | None = None
    dashboard_url: str | None = None
    timeout: timedelta | None = None


def endpoint_url(text: str, field: str) -> tuple[str, bool]:
    """(URL, slack) of one endpoint: `slack+https://...` asks for Slack's text form.
    InvalidInput naming `field`, never repeating the text, when it is no http(s) URL."""
    slack = text.startswith(SLACK)
    url = text.removeprefix(SLACK)
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput(
            f"{field} is not an http(s) URL (write https://HOST/PATH, or slack+https://... for "
            "Slack's text form)"
        )
    return url, slack


def parse_notify(table: object, source: str) -> NotifyFile:
    """Check the `[notify]` table of the policy file `source`; every mistake is an
    InvalidInput naming the key."""
    where = f"policy {source}: [notify]"
    if not isinstance(table, dict):
        raise InvalidInput(f"{where} must be a table (a [notify] heading and its keys)")
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise InvalidInput(
            f"{where} has unknown key {', '.join(unknown)}; its keys are {', '.join(KEYS)} "
            "(a notice never carries the request body: there is no key for it)"
        )
    return NotifyFile(
        endpoints=_endpoints(table.get("endpoints", []), where),
        secret=_secret(table["secret"], where) if "secret" in table else None,
        dashboard_url=_dashboard(table.get("dashboard_url"), where),
        timeout=_timeout(table["timeout"], where) if "timeout" in table else None,
    )


def _endpoints(value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidInput(f'{where} endpoints must be a list of URLs: ["https://...", ...]')
    for n, text in enumerate(value):
        endpoint_url(text, f"{where} endpoints[{n}]")
    return tuple(value)


def _secret(value: object, where: str) -> SecretRef:
    if isinstance(value, str):
        raise InvalidInput(
            f"{where} secret must name where the signing secret is kept, not hold it: "
            f"{_REFERENCE}. A secret written in a file stops being one: replace it"
        )
    if not isinstance(value, dict) or set(value) not in ({"env"}, {"file"}):
        raise InvalidInput(f"{where} secret must be exactly one of {_REFERENCE}")
    ((kind, name),) = value.items()
    if not isinstance(name, str) or not name.strip():
        raise InvalidInput(f"{where} secret.{kind} must be a non-empty string")
    if name.startswith("whsec_"):
        raise InvalidInput(
            f"{where} secret.{kind} holds a signing secret itself; it must name the "
            f"{'environment variable' if kind == 'env' else 'file'} that holds it. A secret "
            "written in a file stops being one: replace it"
        )
    if kind == "env" and not _VARIABLE.fullmatch(name):
        raise InvalidInput(f"{where} secret.env must be the name of an environment variable")
    return SecretRef(env=name) if kind == "env" else SecretRef(file=name)


def _dashboard(value: object, where: str) -> str | None:
    if value is None:
        return None
    field = f"{where} dashboard_url"
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be the dashboard's URL, https://HOST/PATH")
    url, slack = endpoint_url(value, field)
    if slack:
        raise InvalidInput(f"{field} must be the dashboard's URL, https://HOST/PATH")
    return url


def _timeout(value: object, where: str) -> timedelta:
    field = f"{where} timeout"
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise InvalidInput(f'{field} must be a duration like "10s" or "1m"')
    try:
        timeout = parse_duration(value)
    except InvalidInput as exc:
        raise InvalidInput(f"{field}: {exc}") from None
    if not SHORTEST <= timeout <= LONGEST:
        raise InvalidInput(f"{field} must be between 1s and 5m")
    return timeout
