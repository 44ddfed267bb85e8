"""Times and progress as people read them, the same on every surface: the CLI, `run`, the
dashboard and the agents' tools all say "75 s ago" and "146/500"."""

from __future__ import annotations

import json
from datetime import datetime


def iso(value: datetime | None) -> str | None:
    """A time as exact UTC text, `2026-12-01T10:00:12Z` (None stays None)."""
    return None if value is None else value.isoformat().replace("+00:00", "Z")


def relative(at: datetime, now: datetime) -> str:
    """`at` as a person reads it next to `now`: "now", "in 12 s", "75 s ago", "3 min ago",
    "in 5 h", "3 days ago". Each unit is used until 1.5 of the next one, rounded."""
    seconds = (at - now).total_seconds()
    size = abs(seconds)
    if size < 1:
        return "now"
    if size < 90:
        span = f"{size:.0f} s"
    elif size < 90 * 60:
        span = f"{size / 60:.0f} min"
    elif size < 36 * 3600:
        span = f"{size / 3600:.0f} h"
    else:
        span = f"{size / 86400:.0f} days"
    return f"in {span}" if seconds > 0 else f"{span} ago"


def when(at: datetime | None, now: datetime) -> str:
    """Relative time with the exact one beside it: "in 12 s (2026-12-01T10:00:12Z)"."""
    return "none" if at is None else f"{relative(at, now)} ({iso(at)})"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`n` and its noun, singular for one: "1 operation", "3 operations", "0 claims"."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


_DONE = ("completed", "done", "processed", "succeeded", "current")


def progress_text(progress: object) -> str:
    """A provider's progress as a person reads it: {"completed": 146, "total": 500} is
    "146/500" (also under done, processed, succeeded or current); a number is shown as it
    is; anything else as the provider wrote it, as compact JSON. No progress is "-"."""
    if progress is None:
        return "-"
    if isinstance(progress, dict):
        done = next((progress[k] for k in _DONE if k in progress), None)
        total = progress.get("total")
        if _count(done) and _count(total):
            return f"{done}/{total}"
        return json.dumps(progress, ensure_ascii=False, default=str)
    return str(progress)


def _count(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def cut_middle(text: str, limit: int, *, tail: int | None = None) -> str:
    """`text` in at most about `limit` characters, its middle cut out and counted: the
    beginning and the end are kept (`tail` characters of the end, two thirds by default),
    so a message whose reason comes last (a schema error's "is not of type 'integer'")
    keeps it."""
    if len(text) <= limit:
        return text
    end = (limit * 2) // 3 if tail is None else min(tail, limit)
    head = max(limit - end, 0)
    cut = len(text) - head - end
    return f"{text[:head]}… [{cut} characters cut] …{text[len(text) - end :]}"
