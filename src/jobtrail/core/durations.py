"""Durations written the way people write them: 90s, 2m, 1h30m, 1d."""

from __future__ import annotations

import re
from datetime import timedelta

from jobtrail.errors import InvalidInput

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNIT = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str | int | float) -> timedelta:
    if isinstance(text, int | float) and not isinstance(text, bool):
        if text < 0:
            raise InvalidInput(f"a duration cannot be negative: {text}")
        return _bounded(text, text)
    if not isinstance(text, str):
        raise InvalidInput(f"a duration must be text like '90s' or '2m', got {text!r}")
    compact = text.strip().replace(" ", "")
    pos, total = 0, 0.0
    for match in _PART.finditer(compact):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNIT[match.group(2)]
        pos = match.end()
    if not compact or pos != len(compact):
        raise InvalidInput(f"cannot read the duration {text!r}; write it like 90s, 2m, 1h30m or 1d")
    return _bounded(text, total)


# Deadlines are added to today's date: past ten years they stop meaning anything, and far
# past it the date itself overflows.
MAX_DAYS = 3650


def _bounded(text: str | int | float, seconds: float) -> timedelta:
    if seconds > MAX_DAYS * 86400:
        raise InvalidInput(f"the duration {text!r} is too long; the longest is {MAX_DAYS}d")
    return timedelta(seconds=seconds)


def format_duration(delta: timedelta) -> str:
    seconds = round(delta.total_seconds())
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds}s" if seconds else f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes}m" if minutes else f"{hours}h"
