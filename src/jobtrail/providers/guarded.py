"""One call to a provider, with a net under the protocol's promise never to raise."""

from __future__ import annotations

import logging

from jobtrail.core import outcomes as o
from jobtrail.core.model import AttemptKind, Operation
from jobtrail.providers.config import ProviderSpec
from jobtrail.providers.protocol import Provider, Reply

log = logging.getLogger("jobtrail.providers")


async def guarded_call(
    provider: Provider, spec: ProviderSpec, kind: AttemptKind, op: Operation
) -> Reply:
    """The provider's answer. Providers must not raise; one that does anyway (a bug, a
    parser's KeyError, a client error nobody mapped) has its error kept for the attempt,
    with the provider's secrets redacted, and the call counts as one whose outcome is
    unknown: its bytes may have been sent (a create goes to create_unknown, a status read
    backs off)."""
    try:
        return await provider.call(kind, op)
    except Exception as exc:  # any failure of foreign code, by design
        redactor = spec.redactor.extended(values=spec.secret_values())
        message = redactor.text(str(exc))[:500]
        reason = f"the provider raised {type(exc).__name__} during the {kind} call: {message}"
        log.warning("%s", reason, extra={"operation_id": op.operation_id})
        return Reply(
            outcome=o.Ambiguous(reason=reason),
            detail={"error": reason, "exception": type(exc).__name__},
        )
