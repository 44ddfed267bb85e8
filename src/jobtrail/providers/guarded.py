"""One call to a provider, with a net under the protocol's promise never to raise."""

from __future__ import annotations

import asyncio
import logging
import typing

from jobtrail.core import outcomes as o
from jobtrail.core.classify import Failed, Sent, classify
from jobtrail.core.model import AttemptKind, Operation
from jobtrail.core.redact import Redactor
from jobtrail.providers.protocol import Fetched, Provider, Repeats, Reply

log = logging.getLogger("jobtrail.providers")


async def guarded_call(
    provider: Provider,
    redactor: Redactor,
    kind: AttemptKind,
    op: Operation,
    *,
    limit: float | None = None,
    previous: bytes | None = None,
) -> Reply:
    """The provider's answer. Providers must not raise; one that does anyway (a bug, a
    parser's KeyError, a client error nobody mapped) has its error kept for the attempt,
    redacted with `redactor` (the operation's), and the call counts as one whose outcome is
    unknown: its bytes may have been sent (a create goes to create_unknown, a status read
    backs off). So does a call still running after `limit` seconds (code providers' own
    `timeout`), which is abandoned, and so does garbage in place of a Reply (None, a dict,
    another outcome type): the attempt records what came back, and the worker goes on.
    `previous`, given only to a provider that `Repeats` (the HTTP provider), is the identity
    of the last status answer read: an equal answer comes back `repeated`, not decoded."""
    deadline = asyncio.timeout(limit)
    try:
        async with deadline:
            if previous is None:
                reply = await provider.call(kind, op)
            else:
                reply = await typing.cast(Repeats, provider).call(kind, op, previous=previous)
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise  # this worker is cancelling the step (a stop): not the provider's doing
        exception, reason = "CancelledError", _raised("CancelledError", kind, "", redactor)
    except (Exception, SystemExit, KeyboardInterrupt) as exc:  # foreign code, by design
        # A SystemExit or KeyboardInterrupt from inside a provider is its failure, not a stop
        # of the worker (a real Ctrl-C is a signal the CLI handles, never raised in here):
        # left to rise, it would kill the worker again at each restart on the same call.
        exception = type(exc).__name__
        if deadline.expired():
            reason = f"the provider did not answer the {kind} call within {limit:g}s"
        else:
            reason = _raised(exception, kind, str(exc), redactor)
    else:
        if _is_reply(reply, kind) or _is_repeat(reply, kind, previous):
            return reply
        exception = type(reply).__name__
        reason = (
            f"the provider returned garbage for the {kind} call: {_garbage(reply)}, not a "
            "Reply holding an outcome; nothing it said can be trusted"
        )
    log.warning("%s", reason, extra={"operation_id": op.operation_id})
    return Reply(
        outcome=classify(kind, Failed(sent=Sent.NO_ANSWER, reason=reason)),
        detail={"error": reason, "exception": exception},
    )


def in_full(reply: Reply, redactor: Redactor, kind: AttemptKind, op: Operation) -> Reply:
    """A `repeated` answer decoded and judged after all (the worker could not record it as
    seen again), with the net `guarded_call` puts under the provider's code."""
    assert reply.repeated is not None
    try:
        full = reply.repeated.in_full()
    except Exception as exc:  # foreign code, by design (guarded_call)
        exception = type(exc).__name__
        reason = _raised(exception, kind, str(exc), redactor)
        log.warning("%s", reason, extra={"operation_id": op.operation_id})
        return Reply(
            outcome=o.Ambiguous(reason=reason), detail={"error": reason, "exception": exception}
        )
    assert _is_reply(full, kind), "the HTTP provider reads every answer into a Reply"
    return full


def _raised(exception: str, kind: AttemptKind, message: str, redactor: Redactor) -> str:
    said = redactor.text(message)[:500]
    return f"the provider raised {exception} during the {kind} call: {said}".rstrip(": ")


_OUTCOMES = typing.get_args(o.CallOutcome)


def _is_reply(reply: object, kind: AttemptKind) -> bool:
    """A Reply with an outcome of the protocol's (or, for a result fetch, the content)."""
    if not isinstance(reply, Reply) or not isinstance(reply.detail, dict):
        return False
    if reply.fetched is not None:
        return kind is AttemptKind.RESULT and isinstance(reply.fetched, Fetched)
    return isinstance(reply.outcome, _OUTCOMES)


def _is_repeat(reply: object, kind: AttemptKind, previous: bytes | None) -> bool:
    """A status answer told equal to `previous` (the one the caller read last)."""
    return (
        previous is not None
        and kind is AttemptKind.STATUS
        and isinstance(reply, Reply)
        and reply.repeated is not None
        and reply.answer == previous
    )


def _garbage(reply: object) -> str:
    if not isinstance(reply, Reply):
        return f"a {type(reply).__name__}" if reply is not None else "None"
    if reply.fetched is not None:
        return f"a Reply with {type(reply.fetched).__name__} content to a call fetching none"
    if reply.outcome is None:
        return "a Reply with no outcome"
    if not isinstance(reply.detail, dict):
        return f"a Reply whose detail is a {type(reply.detail).__name__}"
    return f"a Reply whose outcome is a {type(reply.outcome).__name__}"
