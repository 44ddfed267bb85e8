"""The "seen again" fast path's memory: per operation this worker follows, the identity of
the last status answer it read (its status code, the headers the core acts on and its
body, providers/http/answer.py `_identity`), kept while the core judged that answer an
unchanged running read.

The next read of the operation whose answer has the same identity, on the record that
read left (same version: nothing else wrote to it since), is recorded as "seen again"
(ledger `seen_again`, store/seen.py) without being decoded, redacted or judged: the core
would judge it the same, so the record moves as the core would move it (the poll counted,
the next one scheduled by the same Retry-After or backoff) and the open observation run
is seen once more. Every answer that differs, the first of each run and every answer
after another write to the record is judged in full, as before.
"""

from __future__ import annotations

from dataclasses import dataclass

from jobtrail.core import outcomes as o
from jobtrail.core.apply import judged
from jobtrail.core.model import AttemptKind, Operation
from jobtrail.core.states import State
from jobtrail.providers.protocol import Reply

MAX_ANSWER = 16 * 1024  # larger answers are judged in full every time
# The answers remembered at once, in bytes: the oldest are forgotten first (and judged in
# full on their next read). A status answer is a few hundred bytes: this holds 100,000.
MAX_BYTES = 32 * 1024 * 1024
_FOLDING = frozenset({State.OBSERVING, State.CANCEL_REQUESTED, State.CANCELLING})


@dataclass(frozen=True, slots=True)
class Seen:
    answer: bytes  # the last answer's identity
    version: int  # the record's version after that read was recorded
    retry_after: str | None  # its Retry-After, as received


class SeenAnswers:
    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        self._by_operation: dict[str, Seen] = {}
        self._bytes, self._max_bytes = 0, max_bytes

    def previous(self, op: Operation, kind: AttemptKind) -> Seen | None:
        """For a status read of `op`, the last answer read of it, if the record is still the
        one that read left."""
        if kind is not AttemptKind.STATUS:
            return None
        seen = self._by_operation.get(op.operation_id)
        return seen if seen is not None and seen.version == op.version else None

    def again(self, seen: Seen, after: Operation) -> None:
        """`seen` was read again and recorded so: `after` is the record now."""
        self._keep(after.operation_id, Seen(seen.answer, after.version, seen.retry_after))

    def judged(self, before: Operation, kind: AttemptKind, reply: Reply, after: Operation) -> None:
        """An answer judged in full; a status answer is remembered when the core judged it
        an unchanged running read, from which the record moved nothing but its poll (the same answer
        would be judged the same next time); else forget what this operation answered."""
        if kind is not AttemptKind.STATUS:
            return
        outcome = reply.outcome
        if (
            reply.answer is not None
            and len(reply.answer) <= MAX_ANSWER
            and isinstance(outcome, o.Observed)
            and not outcome.remote_status.terminal
            and outcome.content is None
            and judged(outcome, before) is outcome
            and before.state is after.state
            and after.state in _FOLDING
            and after.lease_owner is None
            and after.remote_status is outcome.remote_status
        ):
            self._keep(after.operation_id, Seen(reply.answer, after.version, outcome.retry_after))
        else:
            self._forget(before.operation_id)

    def _keep(self, operation_id: str, seen: Seen) -> None:
        self._forget(operation_id)  # and in again last: the oldest read go first
        self._by_operation[operation_id] = seen
        self._bytes += len(seen.answer)
        while self._bytes > self._max_bytes:
            self._forget(next(iter(self._by_operation)))

    def _forget(self, operation_id: str) -> None:
        seen = self._by_operation.pop(operation_id, None)
        if seen is not None:
            self._bytes -= len(seen.answer)
