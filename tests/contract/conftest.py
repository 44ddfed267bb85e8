"""The store contract: one suite, run unchanged against every store kind (`store_kind`
in tests/conftest.py). Tests that take `store` get an opened store on a fresh ledger; tests
that need the database itself (a second store instance, a raw connection) take `ledger_db`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from stores import LedgerDb, fresh_ledger


@pytest.fixture
async def ledger_db(store_kind: str, tmp_path: Path) -> AsyncIterator[LedgerDb]:
    async with fresh_ledger(store_kind, tmp_path) as db:
        yield db
