"""Waiting for something to happen, in tests: poll a condition until it holds, with a
deadline, instead of sleeping for a guessed time. A sleep long enough on a quiet machine is
too short on a loaded one (the test fails) or too long everywhere (the suite crawls).

`until_true` blocks (for plain tests and threads); `until_true_async` yields to the event
loop between looks (for async tests, where the thing awaited may run on that same loop).
A predicate may raise to fail at once (a process that exited, say); `what` names the
condition in the failure (a callable, to say what it found only then: a log, say).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable

INTERVAL = 0.05  # seconds between two looks: short next to any deadline used in tests
What = str | Callable[[], str]


def _failure(timeout: float, what: What, predicate: object) -> AssertionError:
    said = what() if callable(what) else what
    return AssertionError(f"never happened within {timeout:g} s: {said or predicate}")


def until_true(predicate: Callable[[], bool], timeout: float, what: What = "") -> None:
    """Return as soon as `predicate()` is true; AssertionError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise _failure(timeout, what, predicate)
        time.sleep(INTERVAL)


async def until_true_async(
    predicate: Callable[[], bool | Awaitable[bool]], timeout: float, what: What = ""
) -> None:
    """Return as soon as `predicate()` (awaited, if it is a coroutine) is true;
    AssertionError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        answer = predicate()
        if inspect.isawaitable(answer):
            answer = await answer
        if answer:
            return
        if time.monotonic() > deadline:
            raise _failure(timeout, what, predicate)
        await asyncio.sleep(INTERVAL)
