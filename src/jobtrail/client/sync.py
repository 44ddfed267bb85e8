"""`jobtrail.SyncClient`: the asyncio `Client` for scripts and notebooks.

No second implementation: each method runs the `Client` method of the same name on a
private event loop in a background thread, and blocks for its answer. That works where an
event loop is already running in the caller's thread (a notebook), which `asyncio.run`
refuses."""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from typing import Any, Concatenate, ParamSpec, TypeVar

from jobtrail.client.aio import Client
from jobtrail.errors import ClientClosed

P = ParamSpec("P")
T = TypeVar("T")


def _blocking(
    method: Callable[Concatenate[Client, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[SyncClient, P], T]:
    def call(self: SyncClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._run(method(self.client, *args, **kwargs))

    # The Client method's name, docstring and signature (`help()`, a notebook's completion).
    functools.update_wrapper(call, method)
    call.__qualname__ = f"SyncClient.{method.__name__}"
    return call


def _arguments_of(
    init: Callable[Concatenate[Client, P], None],
) -> Callable[[Callable[..., None]], Callable[Concatenate[SyncClient, P], None]]:
    """`SyncClient.__init__` takes `Client.__init__`'s arguments, for type checkers too."""

    def same(method: Callable[..., None]) -> Callable[Concatenate[SyncClient, P], None]:
        functools.update_wrapper(method, init, assigned=("__doc__",))
        return method

    return same


class SyncClient:
    """`with jobtrail.SyncClient("jobtrail.db") as jt: jt.submit(...)`: the same arguments
    and methods as `jobtrail.Client`, without `await`. Opened on creation; `close()` (or the
    end of the `with` block) stops its worker and its thread."""

    @_arguments_of(Client.__init__)
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.client = Client(*args, **kwargs)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="jobtrail-client", daemon=True
        )
        self._thread.start()
        try:
            self._run(self.client.open())
        except BaseException:
            self._stop_loop()
            raise

    def __enter__(self) -> SyncClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if not self._thread.is_alive():
            return
        try:
            self._run(self.client.close())
        finally:
            self._stop_loop()

    submit = _blocking(Client.submit)
    cancel = _blocking(Client.cancel)
    get = _blocking(Client.get)
    find = _blocking(Client.find)
    list = _blocking(Client.list)
    wait = _blocking(Client.wait)
    result = _blocking(Client.result)
    explain = _blocking(Client.explain)
    resolve = _blocking(Client.resolve)
    extend = _blocking(Client.extend)
    census = _blocking(Client.census)
    adopt_job = _blocking(Client.adopt_job)
    cancel_job = _blocking(Client.cancel_job)

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        if not self._thread.is_alive():
            coroutine.close()
            raise ClientClosed("the client is closed; open a new jobtrail.SyncClient")
        future: Future[T] = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()  # an interrupted caller (Ctrl-C) stops waiting on the loop too
            raise

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        if not self._thread.is_alive():
            self._loop.close()
