"""The one loader of the stores' SQL: named sections of `sql/<dialect>/<file>.sql`.

A section starts with a `-- name: <name>` line and runs to the next one; other `--` lines
are comments and are dropped, as is the last `;`. Both stores read their queries
(`queries.sql`) and their prune protocol (`prune.sql`) through it, so the SQL of each
dialect lives in one place and is read one way.

`{braces}` are placeholders filled from `fill`: parts of a statement only Python knows
(the codec's column lists, the states `prune` may remove). A placeholder that `fill` does
not name is kept, braces included, for the caller to fill per call (`.format(...)`), as
with the columns a change assigns.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from importlib import resources

_SECTION = re.compile(r"^-- name: (\w+)\n", flags=re.MULTILINE)


class _KeepUnnamed(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def load_queries(
    dialect: str, file: str = "queries.sql", fill: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The named sections of sql/<dialect>/<file>, comments dropped, `fill`ed."""
    folder = resources.files("jobtrail.store") / "sql" / dialect
    text = (folder / file).read_text(encoding="utf-8")
    return sections(text, f"sql/{dialect}/{file}", fill)


def sections(text: str, where: str, fill: Mapping[str, str] | None = None) -> dict[str, str]:
    """The named sections of one file's `text` (`where` names it in errors)."""
    _, *pairs = _SECTION.split(text)
    found: dict[str, str] = {}
    for name, body in zip(pairs[::2], pairs[1::2], strict=True):
        if name in found:  # a second section of that name would silently replace the first
            raise ValueError(f"{where} names two sections {name!r}")
        sql = "\n".join(line for line in body.splitlines() if not line.startswith("--"))
        sql = sql.strip().rstrip(";")
        found[name] = sql if fill is None else sql.format_map(_KeepUnnamed(fill))
    return found
