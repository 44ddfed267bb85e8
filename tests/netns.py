"""Network namespaces for partition tests (issue 19, "Partitions, on purpose").

A `Lab` gives each host (a worker, a client) its own network namespace, joined to the root
namespace by two veth links: one that reaches the database's address and one that reaches the
provider's. Cutting a link puts its root end down: the host's end loses carrier, its packets
vanish and an open TCP connection hangs until the link is healed (then its retransmissions
get through); a new connection fails after ARP gives up, as to a machine that fell off the
network. Nothing is faked above the kernel.

The database and the provider live in the root namespace at two service addresses held by an
"anchor" veth pair that is never cut: the PostgreSQL server of JOBTRAIL_TEST_PG is reached
through a `Forwarder` listening on the database address (the server itself listens on
loopback only), the simulator listens on the provider address.

Needs root and iproute2 (`ip netns`); `require_netns()` skips the calling test without them,
or fails it under JOBTRAIL_REQUIRE_NETNS=1 (as in CI, .ci/run).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import random
import shutil
import subprocess
import threading
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

import pytest

LINKS = ("db", "api")


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check, timeout=30)


@functools.cache
def netns_problem() -> str | None:
    """Why this machine cannot make network namespaces, or None when it can (asked once)."""
    if os.geteuid() != 0:
        return "network namespaces need root (CI runs as root)"
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed (apt-get install -y iproute2)"
    probe = f"jtprobe-{uuid.uuid4().hex[:8]}"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"`ip netns add` fails: {made.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


def require_netns() -> None:
    """Skip the calling test (fail it, under JOBTRAIL_REQUIRE_NETNS=1) without namespaces."""
    problem = netns_problem()
    if problem is None:
        return
    if os.environ.get("JOBTRAIL_REQUIRE_NETNS") == "1":
        pytest.fail(f"{problem}; JOBTRAIL_REQUIRE_NETNS=1 makes this a failure", pytrace=False)
    pytest.skip(problem)


def _share(first: int, last: int) -> tuple[int, int]:
    """This process's slice of first..last: all of it outside pytest-xdist, else the
    worker's own (gw0 the first slice, gw1 the next, ...), none overlapping another's."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if not worker.startswith("gw") or count <= 1:
        return first, last
    size = (last - first + 1) // count
    start = first + int(worker[2:]) * size
    return start, start + size - 1


@dataclass
class Host:
    """One namespace; `links` maps "db"/"api" to the root end of that veth link."""

    name: str
    namespace: str
    links: dict[str, str] = field(default_factory=dict)

    def run(self, argv: Sequence[str]) -> list[str]:
        """`argv` as a command line run inside this host's namespace."""
        return ["ip", "netns", "exec", self.namespace, *argv]


class Lab:
    """``with Lab() as lab: a = lab.host("a"); lab.cut(a, "db"); lab.heal(a, "db")``.

    `db_ip` and `api_ip` are the service addresses every host reaches, each over its own
    link; everything made is removed on exit, whatever happened."""

    def __init__(self) -> None:
        self.tag = uuid.uuid4().hex[:5]
        self.net = self._free_net()
        self.db_ip = f"10.{self.net}.0.1"
        self.api_ip = f"10.{self.net}.0.2"
        self.hosts: list[Host] = []
        self._anchor = f"jt{self.tag}x0"
        self._guard = f"10.{self.net}.0.0/16"

    @staticmethod
    def _free_net() -> int:
        """A 10.N.0.0/16 no address or route uses, N drawn from this pytest-xdist worker's
        own share of 100..250, so that two workers making labs at once never draw the same
        one between the check and the `ip addr add` (`make slow SLOW_WORKERS=2`)."""
        first, last = _share(100, 250)
        used = _ip("-4", "-o", "addr").stdout + _ip("-4", "route").stdout
        for _ in range(200):
            net = random.randint(first, last)
            if f" 10.{net}." not in used:
                return net
        raise RuntimeError("no free 10.N.0.0/16 for the partition lab")

    def __enter__(self) -> Lab:
        try:
            _ip("link", "add", self._anchor, "type", "veth", "peer", "name", f"jt{self.tag}x1")
            for ip in (self.db_ip, self.api_ip):
                _ip("addr", "add", f"{ip}/32", "dev", self._anchor)
            _ip("link", "set", self._anchor, "up")
            _ip("link", "set", f"jt{self.tag}x1", "up")
            # what a router answers for a host whose link is down: packets back to it go
            # nowhere (never out of the machine's own interface)
            _ip("route", "add", "unreachable", self._guard, "metric", "4000")
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def host(self, name: str) -> Host:
        index = len(self.hosts) + 1
        host = Host(name, f"jt-{self.tag}-{name}")
        self.hosts.append(host)
        _ip("netns", "add", host.namespace)
        inside = ("netns", "exec", host.namespace, "ip")
        _ip(*inside, "link", "set", "lo", "up")
        for k, link in enumerate(LINKS):
            root_end, ns_end = f"jt{self.tag}{index}{link}", f"jt{self.tag}{index}{link}n"
            subnet = f"10.{self.net}.{10 * index + k}"
            _ip("link", "add", root_end, "type", "veth", "peer", "name", ns_end)
            host.links[link] = root_end
            _ip("link", "set", ns_end, "netns", host.namespace)
            _ip("addr", "add", f"{subnet}.1/24", "dev", root_end)
            _ip("link", "set", root_end, "up")
            _ip(*inside, "addr", "add", f"{subnet}.2/24", "dev", ns_end)
            _ip(*inside, "link", "set", ns_end, "up")
            service = self.db_ip if link == "db" else self.api_ip
            _ip(*inside, "route", "add", f"{service}/32", "via", f"{subnet}.1")
        return host

    def via(self, url: str, port: int) -> str:
        """The PostgreSQL URL `url` as a host in a namespace reaches it: through the
        `Forwarder` listening on the database address at `port` (the query kept)."""
        parts = urlsplit(url)
        return urlunsplit(
            parts._replace(netloc=f"{parts.username or 'postgres'}@{self.db_ip}:{port}")
        )

    def cut(self, host: Host, link: str) -> None:
        """Partition `host` from the database ("db") or the provider ("api")."""
        _ip("link", "set", host.links[link], "down")

    def heal(self, host: Host, link: str) -> None:
        _ip("link", "set", host.links[link], "up")

    def close(self) -> None:
        for host in self.hosts:  # deleting a namespace deletes its veth ends, and their pairs
            _ip("netns", "del", host.namespace, check=False)
            for root_end in host.links.values():
                _ip("link", "del", root_end, check=False)
        self.hosts.clear()
        _ip("link", "del", self._anchor, check=False)
        _ip("route", "del", "unreachable", self._guard, "metric", "4000", check=False)


class Forwarder:
    """A TCP forwarder on its own event loop thread: connections to `listen`:port are piped
    to `target`. It only relays bytes; partitions are made by the links, never here."""

    def __init__(self, listen: str, target: tuple[str, int]) -> None:
        self._listen, self._target = listen, target
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="netns-forwarder", daemon=True)
        self.port = 0

    def __enter__(self) -> Forwarder:
        self._thread.start()
        if not self._ready.wait(10) or not self.port:
            raise RuntimeError("the forwarder did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._serve, self._listen, 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            server.close()
            pending = asyncio.all_tasks(self._loop)
            for task in pending:
                task.cancel()
            self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self._loop.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._target)
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            writer.close()


@contextlib.contextmanager
def lab() -> Iterator[Lab]:
    require_netns()
    with Lab() as made:
        yield made


@pytest.fixture(name="partition_lab")
def lab_fixture() -> Iterator[Lab]:
    """`partition_lab`: a `Lab` for one test (import `lab_fixture` into the test module)."""
    with lab() as made:
        yield made
