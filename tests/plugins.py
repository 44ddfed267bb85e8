"""Installing a code provider as a package would be: a module and a `*.dist-info` folder
with `entry_points.txt`, in a folder put on sys.path (and PYTHONPATH, for subprocesses).
importlib.metadata finds such a distribution exactly as it finds a pip-installed one."""

from __future__ import annotations

import importlib
import sys
import textwrap
from pathlib import Path

import pytest

from jobtrail.providers.code.contract import ENTRY_POINT_GROUP


def install(
    folder: Path,
    dist: str,
    modules: dict[str, str],
    entry_points: dict[str, str],
    *,
    version: str = "1.0",
) -> Path:
    """Write `modules` (name -> source) and a distribution `dist` declaring `entry_points`
    (provider name -> `module:factory`) under `folder`; returns `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, source in modules.items():
        (folder / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    info = folder / f"{dist}-{version}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n", encoding="utf-8"
    )
    lines = [f"[{ENTRY_POINT_GROUP}]", *(f"{k} = {v}" for k, v in entry_points.items())]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def on_path(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """Make `folder`'s modules and distributions visible to this process."""
    monkeypatch.syspath_prepend(str(folder))
    importlib.invalidate_caches()


def forget(*modules: str) -> None:
    for name in modules:
        sys.modules.pop(name, None)
