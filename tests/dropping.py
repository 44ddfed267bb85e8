"""A loopback HTTP/1.1 server that counts every request it reads and, for the requests a
test names, closes the connection without answering (the answer lost on the way back).

Not a mock: a real TCP server on 127.0.0.1 that reads each request whole (request line,
headers, Content-Length body) before it decides, so a request counted is a request that
crossed the wire. Answered requests keep the connection open (HTTP/1.1 keep-alive) unless
`close_after_answer`, so a test chooses whether the dropped call goes out on a reused
connection or on a fresh one.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    connection: int  # the number of the connection that carried it, from 1
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True)
class Answer:
    status: int = 200
    json: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None  # a body sent as it is (with its Content-Type in `headers`)


# What to do with a request: an Answer, or None to close the connection unanswered.
Script = Callable[[Seen], Answer | None]


class DroppingServer:
    def __init__(self, script: Script, *, close_after_answer: bool = False) -> None:
        self.script = script
        self.close_after_answer = close_after_answer
        self.seen: list[Seen] = []
        self._connections = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def close(self) -> None:
        for writer in list(self._writers):
            writer.close()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def requests(self, method: str | None = None, prefix: str = "") -> list[Seen]:
        return [
            s
            for s in self.seen
            if (method is None or s.method == method) and s.path.startswith(prefix)
        ]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._connections += 1
        number = self._connections
        self._writers.add(writer)
        try:
            while True:
                seen = await _read_request(reader, number)
                if seen is None:
                    return
                self.seen.append(seen)
                answer = self.script(seen)
                if answer is None:
                    return  # closed unanswered, in `finally`
                writer.write(_encode(answer, close=self.close_after_answer))
                await writer.drain()
                if self.close_after_answer:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            self._writers.discard(writer)
            writer.close()


async def _read_request(reader: asyncio.StreamReader, connection: int) -> Seen | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    body = await reader.readexactly(length) if length else b""
    return Seen(method=method, path=path, connection=connection, headers=headers, body=body)


def _encode(answer: Answer, *, close: bool) -> bytes:
    body = answer.raw if answer.raw is not None else b""
    if answer.json is not None:
        body = json.dumps(answer.json).encode()
    headers = {
        "Content-Type": "application/json",
        "Content-Length": str(len(body)),
        "Connection": "close" if close else "keep-alive",
        **answer.headers,
    }
    head = f"HTTP/1.1 {answer.status} X\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return head.encode("latin-1") + b"\r\n" + body
