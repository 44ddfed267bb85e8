"""Opening a ledger: what cannot be opened is reported plainly, as a StoreError."""

from __future__ import annotations

from pathlib import Path

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
    ["postgresql://ana:s3cr3t@127.0.0.1/ledger?pool_max=lots", "postgresql://ana:s3cr3t@[nope"],
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
