"""Opening a ledger: what cannot be opened is reported plainly, as a StoreError."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from jobtrail.errors import StoreError
from jobtrail.store import open_store

from stores import fresh_ledger


def _unopenable(kind: str, tmp_path: Path) -> str:
    if kind == "sqlite":
        (tmp_path / "a-file").write_text("")
        return str(tmp_path / "a-file" / "ledger.db")
    return "postgresql://ana:s3cr3t-pw@127.0.0.1:1/ledger"  # nothing listens on port 1


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_an_unopenable_ledger_is_a_store_error(kind: str, tmp_path: Path) -> None:
    """A ledger that cannot be opened raises StoreError naming where it looked, and never
    shows a password."""
    url = _unopenable(kind, tmp_path)
    with pytest.raises(StoreError) as caught:
        await open_store(url)
    message = str(caught.value)
    assert "s3cr3t" not in message
    assert ("127.0.0.1:1" if kind == "postgres" else "a-file") in message
    if kind == "postgres":
        assert "JOBTRAIL_DB" in message and "\n" not in message


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://ana:s3cr3t@127.0.0.1/ledger?pool_max=lots",
        "postgresql://ana:s3cr3t@127.0.0.1/ledger?dead_after=-5",
        "postgresql://ana:s3cr3t@127.0.0.1/ledger?dead_after=1m",
        "postgresql://ana:s3cr3t@[nope",
    ],
)
async def test_a_malformed_postgres_url_is_a_store_error(url: str) -> None:
    """A malformed PostgreSQL URL is refused before connecting, without echoing it."""
    with pytest.raises(StoreError) as caught:
        await open_store(url)
    assert "s3cr3t" not in str(caught.value)


@pytest.mark.postgres
async def test_pool_size_from_the_url(tmp_path: Path) -> None:
    """pool_min / pool_max in the URL's query size the connection pool; the rest of the URL
    (here, the test's search_path) still applies."""
    async with fresh_ledger("postgres", tmp_path) as db:
        store = await open_store(db.url + "&pool_min=2&pool_max=3")
        try:
            pool = store._pool  # type: ignore[attr-defined]
            assert (pool.min_size, pool.max_size) == (2, 3)
            assert await store.count_by_state() == {}
        finally:
            await store.close()


async def _setting(store: object, name: str) -> str:
    pool = store._pool  # type: ignore[attr-defined]
    async with pool.connection() as conn:
        row = await (await conn.execute("SELECT current_setting(%s) AS v", (name,))).fetchone()
    return str(row["v"])


BOUNDS = [("", "1min", "3"), ("&dead_after=9", "9s", "3"), ("&dead_after=0", "0", None)]


@pytest.mark.postgres
@pytest.mark.parametrize(("query", "idle", "probes"), BOUNDS)
async def test_each_session_is_bounded_by_dead_after(
    tmp_path: Path, query: str, idle: str, probes: str | None
) -> None:
    """Every pooled session ends a transaction its client left idle for dead_after (60 s by
    default; 0: the server's own settings, as a plain connection has them) and drops a peer
    that stopped answering as soon (the partition itself:
    tests/acceptance/test_partition_liveness.py)."""
    async with fresh_ledger("postgres", tmp_path) as db:
        store = await open_store(db.url + query)
        try:
            if probes is None:
                async with await psycopg.AsyncConnection.connect(db.url) as plain:
                    row = await (await plain.execute("SHOW tcp_keepalives_count")).fetchone()
                    probes = str(row[0]) if row else ""
            assert await _setting(store, "idle_in_transaction_session_timeout") == idle
            assert await _setting(store, "tcp_keepalives_count") == probes
            assert await store.count_by_state() == {}
        finally:
            await store.close()
