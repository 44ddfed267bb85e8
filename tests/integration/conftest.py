"""Fixtures of the integration tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from harness import Harness, harness


@pytest.fixture
async def rig(
    store_kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Harness]:
    """The end-to-end rig (tests/harness.py), once per store kind: a test that takes it
    runs on SQLite and on PostgreSQL (skipped, or failed in CI, without a server)."""
    async with harness(tmp_path, monkeypatch=monkeypatch, kind=store_kind) as h:
        yield h
