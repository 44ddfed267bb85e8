"""A recording proxy: a loopback TCP forwarder put between jobtrail and a provider server
(the simulator and its vendor modes, the AutoRest server, Airflow, moto) that writes down
every HTTP request that crossed it, so a test can compare the wire with the ledger
(tests/wirecheck.py).

It is not a mock: each client connection gets its own upstream connection and the bytes
are relayed unchanged both ways, as they come. So the provider's faults reach jobtrail as
they are: an answer the server never sends is never sent (the upstream closing or resetting
the connection closes or resets the client's), a slow answer stays slow, a 429 is a 429.
The client's request stream is parsed on the side (request line, headers, a Content-Length
or chunked body) only to record each request: method, target (path and query), headers, a
digest of the body, and whether any answer came back before the next request or the close.

It runs its own event loop in a thread, so sync tests, async tests and subprocesses all go
through it the same way. Every proxy started in this process is listed in `PROXIES` (with
what it recorded, after it stops too: the check runs after the test's fixtures are gone).
"""

from __future__ import annotations

import asyncio
import hashlib
import socket
import struct
import threading
from contextlib import suppress
from dataclasses import dataclass, field
from urllib.parse import urlsplit

PROXIES: list[WireProxy] = []  # every proxy started in this process, stopped ones too


def behind(url: str) -> str:
    """The server behind the proxy now listening at `url` (`url` itself if none is): the
    latest proxy started there, since a stopped proxy's port may be handed out again."""
    return next((w.upstream for w in reversed(PROXIES) if w.base_url == url), url)


@dataclass
class WireRequest:
    """One request that crossed a proxy, in the order it arrived."""

    seq: int
    upstream: str  # the base URL of the server behind the proxy
    method: str
    target: str  # path and query, as sent
    headers: dict[str, str]  # names lower-cased (a repeated header keeps its last value)
    body: bytes
    connection: int
    answered: bool = False

    @property
    def digest(self) -> str:
        return "sha256:" + hashlib.sha256(self.body).hexdigest()

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    @property
    def trace_id(self) -> str | None:
        """The W3C trace id of the `traceparent` header, if any."""
        parent = self.headers.get("traceparent", "")
        parts = parent.split("-")
        return parts[1] if len(parts) >= 4 and len(parts[1]) == 32 else None

    def shown(self) -> str:
        said = "answered" if self.answered else "UNANSWERED"
        return f"#{self.seq} {self.method} {self.target} ({said}, body {self.digest[:19]})"


class _Parser:
    """HTTP/1.1 requests out of a client's byte stream, as they complete."""

    def __init__(self) -> None:
        self.buffer = b""

    def feed(self, data: bytes) -> list[tuple[str, str, dict[str, str], bytes]]:
        self.buffer += data
        done = []
        while (one := self._one()) is not None:
            done.append(one)
        return done

    def _one(self) -> tuple[str, str, dict[str, str], bytes] | None:
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return None
        head = self.buffer[:end].decode("latin-1").split("\r\n")
        method, target, *_ = [*head[0].split(" "), "", ""]
        headers: dict[str, str] = {}
        for line in head[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        rest = self.buffer[end + 4 :]
        if "chunked" in headers.get("transfer-encoding", "").lower():
            parsed = _chunked(rest)
            if parsed is None:
                return None
            body, used = parsed
        else:
            size = int(headers.get("content-length", "0") or "0")
            if len(rest) < size:
                return None
            body, used = rest[:size], size
        self.buffer = rest[used:]
        return method, target, headers, body


def _chunked(data: bytes) -> tuple[bytes, int] | None:
    """A chunked body and the bytes it took, or None while incomplete."""
    body, at = b"", 0
    while True:
        line_end = data.find(b"\r\n", at)
        if line_end < 0:
            return None
        size = int(data[at:line_end].split(b";")[0] or b"0", 16)
        start = line_end + 2
        if size == 0:
            trailer_end = data.find(b"\r\n\r\n", line_end)
            if data[start : start + 2] == b"\r\n":
                return body, start + 2
            return None if trailer_end < 0 else (body, trailer_end + 4)
        if len(data) < start + size + 2:
            return None
        body += data[start : start + size]
        at = start + size + 2


@dataclass
class WireProxy:
    """`with WireProxy(upstream) as proxy: proxy.base_url` forwards to `upstream`."""

    upstream: str
    requests: list[WireRequest] = field(default_factory=list)
    base_url: str = ""

    def __post_init__(self) -> None:
        parts = urlsplit(self.upstream)
        self._host = parts.hostname or "127.0.0.1"
        self._port = parts.port or 80
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._connections = 0
        self._open: set[asyncio.StreamWriter] = set()

    def __enter__(self) -> WireProxy:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def start(self) -> str:
        ready = threading.Event()

        def serve() -> None:
            loop = self._loop = asyncio.new_event_loop()
            self._server = loop.run_until_complete(
                asyncio.start_server(self._client, "127.0.0.1", 0)
            )
            port = self._server.sockets[0].getsockname()[1]
            self.base_url = f"http://127.0.0.1:{port}"
            ready.set()
            loop.run_forever()
            self._server.close()
            loop.run_until_complete(_cancel_all(asyncio.all_tasks(loop)))
            loop.run_until_complete(self._server.wait_closed())
            loop.close()

        self._thread = threading.Thread(target=serve, name="wire-proxy", daemon=True)
        self._thread.start()
        ready.wait()
        PROXIES.append(self)
        return self.base_url

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._close_all)
            self._thread.join()

    def _close_all(self) -> None:
        for writer in list(self._open):
            writer.transport.abort()
        assert self._loop is not None
        self._loop.stop()

    def since(self, mark: int) -> list[WireRequest]:
        with self._lock:
            return self.requests[mark:]

    def mark(self) -> int:
        with self._lock:
            return len(self.requests)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._connections += 1
        connection = self._connections
        try:
            up_reader, up_writer = await asyncio.open_connection(self._host, self._port)
        except OSError:
            _abort(writer)  # nothing behind the proxy: the client's connection breaks
            return
        self._open |= {writer, up_writer}
        mine: list[WireRequest] = []
        answer = asyncio.ensure_future(self._answers(up_reader, writer, mine))
        parser = _Parser()
        try:
            while data := await reader.read(65536):
                for method, target, headers, body in parser.feed(data):
                    mine.append(self._record(method, target, headers, body, connection))
                up_writer.write(data)
                await up_writer.drain()
            if up_writer.can_write_eof():
                up_writer.write_eof()
        except (ConnectionError, OSError):
            _abort(up_writer)
        await asyncio.wait([answer])
        up_writer.close()
        writer.close()
        self._open -= {writer, up_writer}

    async def _answers(
        self,
        up_reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        mine: list[WireRequest],
    ) -> None:
        """Relay the upstream's bytes; a reset upstream resets the client."""
        try:
            while data := await up_reader.read(65536):
                if mine:
                    mine[-1].answered = True
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            _abort(writer)
            return
        writer.close()

    def _record(
        self, method: str, target: str, headers: dict[str, str], body: bytes, connection: int
    ) -> WireRequest:
        with self._lock:
            request = WireRequest(
                seq=len(self.requests),
                upstream=self.upstream,
                method=method,
                target=target,
                headers=headers,
                body=body,
                connection=connection,
            )
            self.requests.append(request)
            return request


async def _cancel_all(tasks: set[asyncio.Task[object]]) -> None:
    """The connections still open when the proxy stops, ended (none left pending)."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def _abort(writer: asyncio.StreamWriter) -> None:
    transport = writer.transport
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with suppress(OSError):  # close with a reset, as the upstream did
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()
