"""What a provider's report of work done and billed may hold (`[status] usage`, or a code
provider's reading): a count or an amount, so a finite number that is not negative and
below MAX_USAGE, by name. Anything else is dropped, and the reason is recorded with the call
that reported it, so that no provider can drive a total (`list --json`) below zero or to
infinity, and a reader still sees what was left out. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

MAX_USAGE = 1e18  # larger numbers are no count anyone bills


def checked_usage(usage: Mapping[str, Any]) -> tuple[dict[str, float] | None, dict[str, str]]:
    """The values of `usage` kept (None: none), and why each other one was dropped."""
    kept: dict[str, float] = {}
    dropped: dict[str, str] = {}
    for name, value in usage.items():
        why = _unusable(value)
        if why is None:
            kept[str(name)] = value
        else:
            dropped[str(name)] = f"{why} ({str(value)[:40]}); a usage value is a number >= 0"
    return kept or None, dropped


def _unusable(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"not a number: {type(value).__name__}"
    if not math.isfinite(value):
        return "not a finite number"
    if value < 0:
        return "negative"
    if value >= MAX_USAGE:
        return f"{MAX_USAGE:g} or more"
    return None
