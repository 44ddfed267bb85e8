"""The credential of a call: read from the environment at call time (`auth.env`), or an
expiring token fetched by a command or from a file (providers/http/tokens.py), and what a 401
answer allows.

A 401 to a call made with a fetched token drops that token. The call is then sent once
more, with a fresh token, only when sending it twice cannot do anything twice: a safe read
(status, result, lookup), a cancel by PUT or DELETE, or a create that carries the
idempotency token (or is idempotent by nature). Any other call keeps its 401 answer; the
next call fetches a fresh token.
"""

from __future__ import annotations

import os

from jobtrail.core.model import AttemptKind
from jobtrail.errors import JobtrailError
from jobtrail.providers.file.spec import ProviderSpec
from jobtrail.providers.http.tokens import TokenSource, TokenUnavailable

_IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE"})


class NoCredential(JobtrailError):
    """No credential can be had now (a variable unset, a token command that failed); the
    message says why, and that nothing was sent."""


class Authorizer:
    def __init__(self, spec: ProviderSpec) -> None:
        self.spec = spec
        auth = spec.auth
        self.source = TokenSource(auth) if auth is not None and auth.fetched else None

    async def credential(self) -> str | None:
        """The header value to send (prefix included), or None when the provider has no
        `auth`. NoCredential says why nothing can be sent now."""
        auth = self.spec.auth
        if auth is None:
            return None
        if self.source is None:
            secret = os.environ.get(auth.env or "")
            if not secret:
                raise NoCredential(f"environment variable {auth.env} is not set; nothing was sent")
            return auth.prefix + secret
        try:
            return auth.prefix + await self.source.get()
        except TokenUnavailable as exc:
            raise NoCredential(f"{exc}; nothing was sent") from None

    async def after_refusal(self, kind: AttemptKind, sent: str) -> str | None:
        """After a 401 to a call sent with header value `sent`: the value to send the call
        again with, or None when it must not be sent again (or the token is not fetched)."""
        auth = self.spec.auth
        if self.source is None or auth is None:
            return None
        refused = sent.removeprefix(auth.prefix)
        if not self.may_resend(kind):
            self.source.drop(refused)
            return None
        try:
            return auth.prefix + await self.source.refresh(refused)
        except TokenUnavailable:
            return None  # the 401 answer stands; the next call says why no token came

    def may_resend(self, kind: AttemptKind) -> bool:
        """Whether sending this call twice is harmless (see the module's docstring)."""
        spec = self.spec
        match kind:
            case AttemptKind.STATUS | AttemptKind.RESULT | AttemptKind.RECONCILE:
                return True
            case AttemptKind.CANCEL:
                return spec.cancel_method in _IDEMPOTENT_METHODS
            case AttemptKind.CREATE:
                return spec.idempotency is not None
        return False  # pragma: no cover - every kind is named above
