"""Run a :class:`Simulator` on its own event loop in a background thread.

Tests that drive the worker in subprocesses (or from synchronous code) need a
server that lives outside their own loop. All access to the simulator's state
is marshalled onto the simulator's loop, so the state keeps a single owner.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import replace
from typing import Any, TypeVar

from jobtrail.simulator.records import CallRecord, SimJob
from jobtrail.simulator.server import Simulator

T = TypeVar("T")


class SimulatorThread:
    """``with SimulatorThread(token=...) as sim: sim.base_url`` — same arguments as Simulator."""

    def __init__(
        self,
        token: str | None = None,
        webhook_url: str | None = None,
        webhook_secret: str | None = None,
        webhook_signing: str = "standard",
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        record_calls: bool = True,
        start_timeout: float = 10.0,
    ) -> None:
        self.simulator = Simulator(
            token=token,
            webhook_url=webhook_url,
            webhook_secret=webhook_secret,
            webhook_signing=webhook_signing,
            record_calls=record_calls,
        )
        self._host = host
        self._port = port
        self._start_timeout = start_timeout
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.base_url = ""

    def start(self) -> str:
        self._thread = threading.Thread(target=self._run, name="jobtrail-simulator", daemon=True)
        self._thread.start()
        if not self._ready.wait(self._start_timeout):
            raise RuntimeError("the simulator thread did not start in time")
        if self._error is not None:
            raise RuntimeError(f"the simulator failed to start: {self._error}") from self._error
        return self.base_url

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        self._loop = None
        self._thread = None

    def __enter__(self) -> SimulatorThread:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            self.base_url = loop.run_until_complete(self.simulator.start(self._host, self._port))
        except BaseException as exc:  # handed to the starting thread, which raises it
            self._error = exc
            self._ready.set()
            loop.close()
            return
        self._loop = loop
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(self.simulator.close())
            loop.close()

    # -- thread-safe views of the simulator ----------------------------------

    def _call(self, fn: Callable[[], T]) -> T:
        loop = self._loop
        if loop is None:
            raise RuntimeError("the simulator thread is not running")
        future: Future[T] = Future()

        def run() -> None:
            try:
                future.set_result(fn())
            except BaseException as exc:
                future.set_exception(exc)

        loop.call_soon_threadsafe(run)
        return future.result(timeout=10)

    def stats(self) -> dict[str, Any]:
        return self._call(self.simulator.stats)

    @property
    def jobs(self) -> dict[str, SimJob]:
        """A snapshot job_id -> copy of the job record (the live ones belong to the server loop)."""
        return self._call(lambda: {k: replace(j) for k, j in self.simulator.jobs.items()})

    @property
    def calls(self) -> list[CallRecord]:
        """A snapshot of the calls log (the records themselves are frozen)."""
        return self._call(lambda: list(self.simulator.calls))

    def set_faults(
        self,
        client_reference: str | None = None,
        faults: Mapping[str, Any] | None = None,
        *,
        default: Mapping[str, Any] | None = None,
    ) -> None:
        self._call(lambda: self.simulator.set_faults(client_reference, faults, default=default))

    def reset(self) -> None:
        self._call(self.simulator.reset)

    def signed_event(self, job_id: str, state: str | None = None) -> tuple[dict[str, str], bytes]:
        return self._call(lambda: self.simulator.signed_event(job_id, state))
