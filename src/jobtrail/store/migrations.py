"""Numbered SQL migrations, one folder per dialect, applied in order on open."""

from __future__ import annotations

from importlib import resources


def migrations(dialect: str) -> list[tuple[int, str]]:
    """(version, sql) pairs for `dialect`, sorted by version."""
    folder = resources.files("jobtrail.store") / "sql" / dialect
    found = []
    for entry in folder.iterdir():
        name = entry.name
        if name.endswith(".sql") and name[:4].isdigit():
            found.append((int(name[:4]), entry.read_text(encoding="utf-8")))
    return sorted(found)
