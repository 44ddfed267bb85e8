"""One call to a provider, with a net under the protocol's promise never to raise."""

from __future__ import annotations

import asyncio
import logging

from jobtrail.core import outcomes as o
from jobtrail.core.model import AttemptKind, Operation
from jobtrail.core.redact import Redactor
from jobtrail.providers.protocol import Provider, Reply

log = logging.getLogger("jobtrail.providers")


async def guarded_call(
    provider: Provider,
    redactor: Redactor,
    kind: AttemptKind,
    op: Operation,
    *,
    limit: float | None = None,
) -> Reply:
    """The provider's answer. Providers must not raise; one that does anyway (a bug, a
    parser's KeyError, a client error nobody mapped) has its error kept for the attempt,
    redacted with `redactor` (the operation's), and the call counts as one whose outcome is
    unknown: its bytes may have been sent (a create goes to create_unknown, a status read
    backs off). So does a call still running after `limit` seconds (code providers' own
    `timeout`), which is abandoned."""
    deadline = asyncio.timeout(limit)
    try:
        async with deadline:
            return await provider.call(kind, op)
    except Exception as exc:  # any failure of foreign code, by design
        exception = type(exc).__name__
        if deadline.expired():
            reason = f"the provider did not answer the {kind} call within {limit:g}s"
        else:
            message = redactor.text(str(exc))[:500]
            reason = f"the provider raised {exception} during the {kind} call: {message}"
    log.warning("%s", reason, extra={"operation_id": op.operation_id})
    return Reply(
        outcome=o.Ambiguous(reason=reason),
        detail={"error": reason, "exception": exception},
    )
