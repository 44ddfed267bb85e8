"""Provider files shipped in the package, usable by name from any directory.

Each ``NAME.toml`` here is an ordinary provider file (docs/providers.md). The first
sentence of its opening comment is its one-line summary for ``jobtrail provider list``. A
name is looked up in the user's own folder first (``JOBTRAIL_PROVIDERS`` or
``./providers``), so a local file of the same name overrides the shipped one.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable


@dataclass(frozen=True, kw_only=True)
class Profile:
    name: str
    summary: str
    text: str


def _folder() -> Traversable:
    return resources.files("jobtrail.profiles")


def profile_names() -> list[str]:
    """The shipped profiles' names, sorted."""
    return sorted(
        entry.name.removesuffix(".toml")
        for entry in _folder().iterdir()
        if entry.is_file() and entry.name.endswith(".toml")
    )


def shipped_profile(name: str) -> Profile | None:
    """The shipped profile called ``name``, or None."""
    entry = _folder() / f"{name}.toml"
    if not entry.is_file():
        return None
    text = entry.read_text(encoding="utf-8")
    return Profile(name=name, summary=_summary(text), text=text)


def shipped_profiles() -> list[Profile]:
    found = (shipped_profile(name) for name in profile_names())
    return [p for p in found if p is not None]


def _summary(text: str) -> str:
    """The first sentence of the file's opening comment."""
    words: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith("#") or not stripped.lstrip("#").strip():
            break
        words.append(stripped.lstrip("#").strip())
    joined = " ".join(words)
    end = joined.find(". ")
    return joined if end < 0 else joined[: end + 1]
