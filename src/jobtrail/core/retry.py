"""The retry-on-stale rule, written once for every writer that reads a record, decides, and
commits only if nobody changed it meanwhile (the ledger's verbs, the webhook intake).

A stale write is not an error: another writer (a worker's step, a cancel, a webhook) moved
the record between the read and the commit, so the decision is made again on the fresh
record. That is tried a bounded number of times, so that a record that never stops moving
cannot keep a caller spinning; then the caller's own answer is given (an error saying what
to do, or a fallback). This module makes no call of its own: the step does."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")
STALE_TRIES = 8  # reads of a record that keeps changing before giving up


async def on_stale(
    step: Callable[[], Awaitable[T | None]],
    give_up: BaseException | Callable[[], Awaitable[T]],
    *,
    tries: int = STALE_TRIES,
) -> T:
    """`step()`'s value, retried while it returns None (its write went stale: it reads
    again and decides again), at most `tries` times; then `give_up` is raised (an error) or
    awaited (a fallback). Errors of `step` propagate at once."""
    for _ in range(tries):
        done = await step()
        if done is not None:
            return done
    if isinstance(give_up, BaseException):
        raise give_up
    return await give_up()
