"""How much of what a provider says is stored: every answer's texts and documents are
capped, so that no provider can make one read cost megabytes of ledger (a 20 MB progress
document, a detail dump, a state word the size of a book).

A text over TEXT_LIMIT characters keeps its beginning and says how long it was; a document
(progress, usage, a call's detail) whose JSON is over DOCUMENT_LIMIT characters is replaced
by one that says it was cut, how long it was, and keeps the beginning of its text. The cut
is recorded where the value was: a reader sees that something was left out, and how much.
Pure: no I/O.
"""

from __future__ import annotations

import json
from dataclasses import fields, is_dataclass, replace
from enum import Enum
from typing import Any, TypeVar

TEXT_LIMIT = 64 * 1024
DOCUMENT_LIMIT = 64 * 1024
KEPT = 4096  # characters of a cut document's text kept to read
T = TypeVar("T")


def capped_text(value: str) -> str:
    if len(value) <= TEXT_LIMIT:
        return value
    return f"{value[:TEXT_LIMIT]}... [cut: {len(value)} characters, the first {TEXT_LIMIT} kept]"


def capped_document(value: Any) -> Any:
    """`value` itself when its JSON text is DOCUMENT_LIMIT characters or less; else a small
    document recording the cut."""
    if value is None or isinstance(value, bool | int | float):
        return value
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    if len(text) <= DOCUMENT_LIMIT:
        return value
    return {
        "cut": f"the provider's document was {len(text)} characters of JSON; stored: its "
        f"first {KEPT} characters (the limit is {DOCUMENT_LIMIT})",
        "characters": len(text),
        "kept": text[:KEPT],
    }


def capped_outcome(outcome: T) -> T:
    """An outcome with its texts and documents capped (bytes, a result's content, are not
    touched: a result has its own size limit)."""
    if not is_dataclass(outcome) or isinstance(outcome, type):
        return outcome
    changes: dict[str, Any] = {}
    for f in fields(outcome):
        value = getattr(outcome, f.name)
        if isinstance(value, str) and not isinstance(value, Enum):
            new: Any = capped_text(value)
        elif isinstance(value, tuple) and all(isinstance(v, str) for v in value):
            new = tuple(capped_text(v) for v in value)
        elif isinstance(value, dict | list):
            new = capped_document(value)
        else:
            continue
        if new is not value and new != value:
            changes[f.name] = new
    return replace(outcome, **changes) if changes else outcome
