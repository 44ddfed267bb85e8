"""docs/providers.md's Reference describes the keys the schema (providers/file/keys.py) knows: every
key a key table names exists, and every key the schema knows is named in its section."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from jobtrail.providers.file import keys as k
from jobtrail.providers.file.schema import keys_of

DOC = Path(__file__).parents[2] / "docs" / "providers.md"

# each Reference section, by its heading, and the record of the table it describes
SECTIONS: dict[str, type[Any]] = {
    "Top level": k.ProviderKeys,
    "`[create]`": k.CreateKeys,
    "`[status]`": k.StatusKeys,
    "`[poll]`": k.PollKeys,
    "`[cancel]`": k.CancelKeys,
    "`[result]`": k.ResultKeys,
    "`[reconcile]`": k.ReconcileKeys,
    "`[census]`": k.CensusKeys,
    "`[webhooks]`": k.WebhookSpec,
    "`[deadlines]`": k.DeadlinesKeys,
}


def _reference() -> dict[str, str]:
    text = DOC.read_text(encoding="utf-8").split("\n## Reference\n", 1)[1]
    parts = re.split(r"^### (.+)$", text, flags=re.MULTILINE)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


def _named(text: str) -> set[str]:
    """Every name written in backticks in `text` (`{ path, items }` names both)."""
    return {w for span in re.findall(r"`([^`]+)`", text) for w in re.findall(r"[a-z_]+", span)}


def _table_keys(text: str) -> set[str]:
    """The keys the first column of the section's key tables names."""
    found: set[str] = set()
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    for row in rows:
        cell = row.split("|")[1]
        found.update(re.findall(r"`\[?([a-z_.]+)\]?`", cell))
    return found


def _nested(record: type[Any]) -> list[tuple[str, type[Any]]]:
    """The sub-tables of a record, by their dotted name."""
    found = []
    for name, f in keys_of(record).items():
        sub = f.metadata["each"] or f.metadata["kind"]
        if isinstance(sub, type) and hasattr(sub, "__dataclass_fields__"):
            found.append((name, sub))
            found.extend((f"{name}.{n}", r) for n, r in _nested(sub))
    return found


def _resolves(record: type[Any], dotted: str) -> bool:
    head, _, rest = dotted.partition(".")
    known = keys_of(record)
    if head not in known:
        return False
    if not rest:
        return True
    sub = known[head].metadata["each"] or known[head].metadata["kind"]
    return isinstance(sub, type) and _resolves(sub, rest)


@pytest.mark.parametrize("heading", sorted(SECTIONS))
def test_every_documented_key_exists(heading: str) -> None:
    """A key a Reference table names is one the schema knows (no stale or misspelt key)."""
    record = SECTIONS[heading]
    documented = _table_keys(_reference()[heading])
    unknown = sorted(d for d in documented if not _resolves(record, d))
    # `[states]` maps free words; a top-level row may name a table (`[poll]`)
    assert unknown == [], f"{heading} documents keys the schema does not know: {unknown}"


@pytest.mark.parametrize("heading", sorted(SECTIONS))
def test_every_schema_key_is_documented(heading: str) -> None:
    """Each key of a table, and of its sub-tables, is named in that table's section."""
    record = SECTIONS[heading]
    own = {h.strip("`[]") for h in _reference()}  # a table with its own section
    named = _named(_reference()[heading]) | (own if record is k.ProviderKeys else set())
    missing = [name for name in keys_of(record) if name not in named]
    for where, sub in _nested(record):
        if where.split(".")[0] not in own or record is not k.ProviderKeys:
            missing.extend(f"{where}.{n}" for n in keys_of(sub) if n not in named)
    assert missing == [], f"{heading} does not document: {missing}"


def test_the_sections_cover_every_table() -> None:
    """Every table of the file has its Reference section (or is described under one)."""
    tables = {name for name, _ in _nested(k.ProviderKeys) if "." not in name}
    described = {heading.strip("`[]") for heading in SECTIONS} | {"auth", "request_ids", "redact"}
    assert tables <= described, sorted(tables - described)
