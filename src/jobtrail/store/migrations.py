"""Numbered SQL migrations, one folder per dialect, applied in order on open."""

from __future__ import annotations

from collections.abc import Iterable
from importlib import resources

from jobtrail.errors import StoreError


def migrations(dialect: str) -> list[tuple[int, str]]:
    """(version, sql) pairs for `dialect`, sorted by version."""
    folder = resources.files("jobtrail.store") / "sql" / dialect
    found = []
    for entry in folder.iterdir():
        name = entry.name
        if name.endswith(".sql") and name[:4].isdigit():
            found.append((int(name[:4]), entry.read_text(encoding="utf-8")))
    return sorted(found)


def refuse_newer(dialect: str, applied: Iterable[int]) -> None:
    """Refuse a ledger whose schema is newer than every migration this jobtrail ships: its
    tables may mean things this version does not know, so reading or writing it could
    misreport or corrupt it."""
    newest = max(applied, default=0)
    known = max((version for version, _ in migrations(dialect)), default=0)
    if newest > known:
        raise StoreError(
            f"this ledger was migrated by a newer jobtrail (schema {newest}, this one knows "
            f"up to {known}); upgrade jobtrail"
        )
