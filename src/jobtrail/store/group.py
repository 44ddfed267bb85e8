"""Group commit: many concurrent steps' writes share one transaction.

While one commit is in flight, new writes queue; the next commit takes them all. Under
load the batches grow by themselves, so durability stays full (every write is committed
before its caller goes on) while the cost of each fsync is shared. Each change is encoded
(`prepare`) by its caller as it is queued, while the commit before it is in flight, so the
store's writer only executes. `Grouped` is the queue itself: the ledger's changes and the
store's creates (store/engine.py) each have one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

from jobtrail.store.changes import Change, CommitResult

I = TypeVar("I")  # noqa: E741
R = TypeVar("R")


class Grouped(Generic[I, R]):
    """`run` applied to batches of what `submit` is given, one batch in flight at a time;
    `run` returns one result per item, in order (an exception: that item's alone), or
    raises for the whole batch."""

    def __init__(
        self,
        run: Callable[[Sequence[I]], Awaitable[Sequence[R | Exception]]],
        max_batch: int = 500,
    ) -> None:
        self._run, self._max = run, max_batch
        self._queue: list[tuple[I, asyncio.Future[R]]] = []
        self._flusher: asyncio.Task[None] | None = None

    async def submit(self, item: I) -> R:
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._queue.append((item, future))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush())
        return await future

    async def _flush(self) -> None:
        while self._queue:
            batch, self._queue = self._queue[: self._max], self._queue[self._max :]
            try:
                results = await self._run([item for item, _ in batch])
            except BaseException as exc:
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                if not isinstance(exc, Exception):
                    raise
                continue
            for (_, future), result in zip(batch, results, strict=True):
                if future.done():
                    continue
                if isinstance(result, Exception):
                    future.set_exception(result)
                else:
                    future.set_result(result)


class GroupCommitter:
    """A store's `commit`, each change prepared by `prepare` (store/engine.py
    `Store.prepare`) as it is queued."""

    def __init__(
        self,
        commit: Callable[[Sequence[Change]], Awaitable[Sequence[CommitResult]]],
        prepare: Callable[[Change], Change],
        max_batch: int = 500,
    ) -> None:
        self._group: Grouped[Change, CommitResult] = Grouped(commit, max_batch)
        self._prepare = prepare

    async def commit(self, change: Change) -> CommitResult:
        return await self._group.submit(self._prepare(change))
