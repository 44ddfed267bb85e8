"""CPU seconds spent on a SQLite store's writer thread (`time.thread_time` around each
piece of work it is handed), to split a process's CPU between the event loop and the writer."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from jobtrail.store.sqlite import SqliteStore

T = TypeVar("T")


class WriterCpu:
    """CPU seconds spent on the store's writer thread, by wrapping what it is handed."""

    def __init__(self, store: SqliteStore) -> None:
        self.seconds = 0.0
        inner = store._call

        async def call(fn: Callable[..., T], *args: Any) -> T:
            def timed(*inner_args: Any) -> T:
                start = time.thread_time()
                try:
                    return fn(*inner_args)
                finally:
                    self.seconds += time.thread_time() - start

            return await inner(timed, *args)

        store._call = call  # type: ignore[method-assign]
