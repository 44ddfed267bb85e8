"""Where notices go, from the three places an operator says it, the first that says wins:

    endpoints       `--notify URL` flags   > [notify] endpoints  > JOBTRAIL_NOTIFY
    signing secret                           [notify] secret     > JOBTRAIL_NOTIFY_SECRET
    dashboard link                           [notify] dashboard_url > JOBTRAIL_DASHBOARD_URL
    timeout                                  [notify] timeout    > 10 s

`[notify]` is the policy file's table (`--policy` or JOBTRAIL_POLICY; core/notify_file.py).
A secret the file refers to must be there: an unset variable or an unreadable file stops the
start with a sentence naming the key, rather than sending unsigned notices. The secret's
value goes only into the signer (and the log redactor), never into an error or a record.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from standardwebhooks import Webhook

from jobtrail.core.notify_file import SecretRef
from jobtrail.errors import InvalidInput, JobtrailError
from jobtrail.ledger.policy import load_notify
from jobtrail.services.notify import (
    DASHBOARD_ENV,
    DEFAULT_TIMEOUT,
    SECRET_ENV,
    URLS_ENV,
    Endpoint,
    endpoint,
    signer,
)

POLICY_ENV = "JOBTRAIL_POLICY"


@dataclass(frozen=True, kw_only=True)
class NotifySetup:
    endpoints: tuple[Endpoint, ...]
    sign: Webhook | None
    dashboard: str | None
    timeout: timedelta


def notify_setup(flags: Sequence[str], environ: Mapping[str, str] = os.environ) -> NotifySetup:
    """The notifier's settings; InvalidInput naming the flag, key or variable at fault."""
    policy = environ.get(POLICY_ENV) or None
    file = load_notify(policy)
    where = f"policy {policy}: [notify]"
    if flags:
        endpoints = [endpoint(text, "--notify") for text in flags]
    elif file.endpoints:
        endpoints = [endpoint(t, f"{where} endpoints[{n}]") for n, t in enumerate(file.endpoints)]
    else:
        texts = [t.strip() for t in environ.get(URLS_ENV, "").split(",") if t.strip()]
        endpoints = [endpoint(text, URLS_ENV) for text in texts]
    if file.secret is not None:
        sign: Webhook | None = signer(
            _read_secret(file.secret, where, environ), f"{where} secret ({file.secret.where})"
        )
    else:
        secret = environ.get(SECRET_ENV, "").strip()
        sign = signer(secret, SECRET_ENV) if secret else None
    return NotifySetup(
        endpoints=tuple(endpoints),
        sign=sign,
        dashboard=file.dashboard_url or environ.get(DASHBOARD_ENV) or None,
        timeout=file.timeout or DEFAULT_TIMEOUT,
    )


def secret_values(environ: Mapping[str, str] = os.environ) -> list[str]:
    """Every signing secret a notifier here may use, for the log redactor; a policy file or
    secret that cannot be read adds nothing (the notifier's start says why)."""
    values = [environ.get(SECRET_ENV, "").strip()]
    try:
        file = load_notify(environ.get(POLICY_ENV) or None)
        if file.secret is not None:
            values.append(_read_secret(file.secret, "[notify]", environ))
    except JobtrailError:
        pass
    return [value for value in values if value]


def _read_secret(ref: SecretRef, where: str, environ: Mapping[str, str] = os.environ) -> str:
    if ref.env is not None:
        value = environ.get(ref.env, "").strip()
        if not value:
            raise InvalidInput(
                f"{where} secret names the environment variable {ref.env}, which is not set; "
                "set it to the signing secret (whsec_...) or change the key"
            )
        return value
    assert ref.file is not None
    try:
        value = Path(ref.file).expanduser().read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(
            f"{where} secret names the file {ref.file}, which cannot be read "
            f"({type(exc).__name__}); make it readable by this user or change the key"
        ) from None
    if not value:
        raise InvalidInput(f"{where} secret names the file {ref.file}, which is empty")
    return value
