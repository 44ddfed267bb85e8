"""A client cut from the database in the middle of a write does not hold what it holds for
hours (issue 19's liveness limit, now bounded): the server ends its session within the
ledger URL's `dead_after` (default 60 s; store/postgres.py `_liveness`).

A `jobtrail submit` runs in its own network namespace (tests/netns.py) and reaches
PostgreSQL through a forwarder in the root namespace, as through a proxy or a load balancer:
the server's own TCP connection stays healthy, so only a bound the server keeps by itself
can end the session. The submit is made to wait at the database (behind a table lock),
its link is cut, and the lock is released: its statements run, the server answers into the
void, and the transaction waits for a COMMIT that cannot come. With `dead_after=4` the
server ends that session and the key is free again within seconds; with `dead_after=0`
(PostgreSQL's defaults, as before) the same session is still there holding the key when
the first one is long gone: the bound is what ended it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from pathlib import Path

import psycopg
import pytest

from jobtrail.store import open_store
from netns import Forwarder, Host, Lab, lab_fixture  # noqa: F401 (the fixture partition_lab)

from cliutil import JOBTRAIL
from harness import ROOT, SECRET
from stores import migrated_ledger
from waits import until_true_async

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

DEAD_AFTER_S = 4


def _provider(folder: Path) -> Path:
    text = (ROOT / "providers" / "simulator.toml").read_text()
    text = re.sub(r"(?m)^base_url = .*$", 'base_url = "http://10.255.255.1:9"', text)
    text = re.sub(r"(?m)^base_url_env = .*\n", "", text)
    path = folder / "simulator.toml"
    path.write_text(text)
    return path


async def _sessions(admin: str, name: str) -> list[tuple[str, str | None]]:
    async with await psycopg.AsyncConnection.connect(admin, autocommit=True) as pg:
        rows = await pg.execute(
            "SELECT state, wait_event_type FROM pg_stat_activity WHERE application_name = %s",
            (name,),
        )
        return [(str(s), w) for s, w in await rows.fetchall()]


async def _cut_mid_submit(
    net: Lab, host: Host, url: str, admin: str, provider: Path, name: str
) -> asyncio.subprocess.Process:
    """Start a submit from `host`, let it reach the database and wait there, cut its link,
    then let its statements run: its session is left waiting for the COMMIT."""
    env = ["/usr/bin/env", "-i", "PATH=/usr/bin:/bin", f"REPORTS_API_TOKEN={SECRET}"]
    args = ["--db", url, "submit", str(provider), "--body", json.dumps({"n": 1})]
    args += ["--key", "the-key", "--json"]
    async with await psycopg.AsyncConnection.connect(admin) as hold:
        await hold.execute("LOCK TABLE operations IN EXCLUSIVE MODE")
        proc = await asyncio.create_subprocess_exec(
            *host.run([*env, JOBTRAIL, *args]),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )

        async def waiting() -> bool:
            return any(w == "Lock" for _, w in await _sessions(admin, name))

        await until_true_async(waiting, 30, "the submit never waited at the database")
        net.cut(host, "db")
    return proc  # the lock is released here: the submit's statements go through, unheard


async def test_a_client_cut_mid_submit_holds_its_key_no_longer_than_dead_after(
    partition_lab: Lab, tmp_path: Path
) -> None:
    net = partition_lab
    provider = _provider(tmp_path)
    with Forwarder(net.db_ip, ("127.0.0.1", 5432)) as forward:
        async with migrated_ledger("postgres", tmp_path) as db:
            store = await open_store(db.url)  # migrated once, before the clients come
            await store.close()
            procs = []
            try:

                async def cut(name: str, dead_after: int) -> float:
                    via = net.via(db.url, forward.port)
                    url = f"{via}&application_name={name}&dead_after={dead_after}"
                    host = net.host(name.removeprefix("liveness-"))
                    procs.append(await _cut_mid_submit(net, host, url, db.url, provider, name))
                    return time.monotonic()

                async def gone(name: str) -> bool:
                    return not await _sessions(db.url, name)

                # bounded: the server ends the cut client's session within dead_after
                cut_at = await cut("liveness-bounded", DEAD_AFTER_S)
                await until_true_async(
                    lambda: gone("liveness-bounded"),
                    DEAD_AFTER_S + 15,
                    "the cut client's session outlived its dead_after",
                )
                took = time.monotonic() - cut_at
                # unbounded (PostgreSQL's defaults): the same cut leaves the session open,
                # its transaction waiting for the client, well past that
                cut_at = await cut("liveness-unbounded", 0)
                await asyncio.sleep(max(took, DEAD_AFTER_S) + 5 - (time.monotonic() - cut_at))
                held = await _sessions(db.url, "liveness-unbounded")
                assert any(state == "idle in transaction" for state, _ in held), (held, took)
            finally:
                for proc in procs:
                    with contextlib.suppress(ProcessLookupError):
                        proc.kill()
                    await proc.wait()
                async with await psycopg.AsyncConnection.connect(db.url, autocommit=True) as pg:
                    await pg.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                        " WHERE application_name LIKE 'liveness-%%'"
                    )
