"""Group commit: many concurrent steps' changes share one transaction.

While one commit is in flight, new changes queue; the next commit takes them all. Under
load the batches grow by themselves, so durability stays full (every change is committed
before its caller goes on) while the cost of each fsync is shared. Each change is encoded
(`prepare`) by its caller as it is queued, while the commit before it is in flight, so the
store's writer only executes.
"""

from __future__ import annotations

import asyncio

from jobtrail.store.base import Change, CommitResult, Store


class GroupCommitter:
    def __init__(self, store: Store, max_batch: int = 500) -> None:
        self._store, self._max = store, max_batch
        self._queue: list[tuple[Change, asyncio.Future[CommitResult]]] = []
        self._flusher: asyncio.Task[None] | None = None
        self._prepare = getattr(store, "prepare", None)  # store/engine.py EngineStore.prepare

    async def commit(self, change: Change) -> CommitResult:
        if self._prepare is not None:
            change = self._prepare(change)
        future: asyncio.Future[CommitResult] = asyncio.get_running_loop().create_future()
        self._queue.append((change, future))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush())
        return await future

    async def _flush(self) -> None:
        while self._queue:
            batch, self._queue = self._queue[: self._max], self._queue[self._max :]
            try:
                results = await self._store.commit([change for change, _ in batch])
            except BaseException as exc:
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                if not isinstance(exc, Exception):
                    raise
                continue
            for (_, future), result in zip(batch, results, strict=True):
                if not future.done():
                    future.set_result(result)
