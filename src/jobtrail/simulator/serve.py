"""``jobtrail simulator``: serve the simulator until SIGINT or SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import signal

from jobtrail.simulator.server import Simulator


async def serve_forever(
    host: str,
    port: int,
    *,
    token: str | None = None,
    webhook_url: str | None = None,
    webhook_secret: str | None = None,
    webhook_signing: str = "standard",
    record_calls: bool = True,
) -> None:
    """Serve until a stop signal; print exactly one line, the base URL, once listening."""
    simulator = Simulator(
        token=token,
        webhook_url=webhook_url,
        webhook_secret=webhook_secret,
        webhook_signing=webhook_signing,
        record_calls=record_calls,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        # not every platform/loop supports signal handlers (Windows, non-main threads)
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
            installed.append(sig)
    try:
        url = await simulator.start(host, port)
        # the line a parent process (demo, tests) reads to learn the port
        print(url, flush=True)
        await stop.wait()
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
        await simulator.close()
