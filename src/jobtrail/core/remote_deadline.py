"""A deadline pushed down to the provider: where it takes one, and the value jobtrail writes.

Several APIs stop a job by themselves after a duration the create request gives (Replicate's
`Cancel-After` header, Bedrock's `timeoutDurationInHours`, Mistral's `timeout_hours`,
OpenAI's `completion_window`). Written there, the operation's result deadline bounds the
remote work even while jobtrail is down. The value is computed at submit from the result
deadline (a duration, so the same submit always writes the same request), rounded down to
what the provider accepts, and never longer than jobtrail's own: a provider whose shortest
accepted deadline is longer gets none, and `explain` says that only a cancel stops it.
The value is part of the recorded request, so a same-token retry sends it unchanged and
the fingerprint covers it.

Pure functions: the ledger places the value (ledger.admit), the core judges nothing here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import Any

from jobtrail.core.durations import format_duration
from jobtrail.core.lookup import MISSING, find, placed, without
from jobtrail.errors import InvalidInput

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_UNIT_WORDS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


class Form(StrEnum):
    """How the value is written: a number of units (`72`), or text with its unit (`"72h"`,
    a Go-style duration as Replicate reads it)."""

    NUMBER = "number"
    TEXT = "text"


@dataclass(frozen=True, kw_only=True)
class RemoteDeadline:
    """Where a provider takes a deadline of its own, and what values it accepts: whole
    multiples of `step` units from `least` to `most` (None: no upper bound)."""

    header: str | None = None
    field: str | None = None  # a dotted path in the JSON body
    unit: str = "s"
    form: Form = Form.NUMBER
    step: int = 1
    least: int = 1
    most: int | None = None

    def __post_init__(self) -> None:
        if (self.header is None) == (self.field is None):
            raise InvalidInput("a remote deadline goes in exactly one of a header or a field")
        if self.unit not in UNITS:
            raise InvalidInput(f"a remote deadline's unit is one of {', '.join(UNITS)}")
        if self.step < 1 or self.least < 1 or (self.most is not None and self.most < self.least):
            raise InvalidInput("a remote deadline needs step >= 1 and 1 <= min <= max")

    def value_for(self, duration: timedelta) -> int | None:
        """The longest accepted value not longer than `duration` (in units), or None."""
        units = int(duration.total_seconds() // UNITS[self.unit])
        if self.most is not None:
            units = min(units, self.most)
        units -= units % self.step
        return units if units >= self.least else None

    def rendered(self, value: int) -> int | str:
        return value if self.form is Form.NUMBER else f"{value}{self.unit}"

    def seconds(self, value: int) -> float:
        return float(value * UNITS[self.unit])

    def describe(self) -> str:
        """Where and how, in words: "body field timeoutDurationInHours, whole hours from 24
        to 168", "header Cancel-After, whole seconds written as text (300s)"."""
        where = f"header {self.header}" if self.header else f"body field {self.field}"
        step = "whole" if self.step == 1 else f"multiples of {self.step}"
        text = f"{where}, {step} {_UNIT_WORDS[self.unit]}"
        if self.most is not None:
            text += f" from {self.least} to {self.most}"
        elif self.least > 1:
            text += f" from {self.least}"
        if self.form is Form.TEXT:
            text += f" written as text ({self.rendered(self.least)})"
        return text


@dataclass(frozen=True, kw_only=True)
class Placed:
    body: Any
    headers: dict[str, str]
    seconds: float | None  # the deadline as sent, None when none was written


def place(
    deadline: RemoteDeadline | None, body: Any, headers: dict[str, str], result: timedelta
) -> Placed:
    """The request with the provider's deadline written in: `result` (the result
    deadline's duration) rounded down to what the provider accepts. A body that already
    holds a different value there is refused: that place is jobtrail's."""
    if deadline is None:
        return Placed(body=body, headers=headers, seconds=None)
    value = deadline.value_for(result)
    if value is None:
        return Placed(body=body, headers=headers, seconds=None)
    written = deadline.rendered(value)
    if deadline.header is not None:
        name = deadline.header.lower()
        given = [v for k, v in headers.items() if k.lower() == name]
        if given and given != [str(written)]:
            raise InvalidInput(
                f"the request header {deadline.header} is written by jobtrail from the result "
                f"deadline ({format_duration(result)}, so {str(written)!r}): leave it out, or "
                "give the result deadline you want instead"
            )
        kept = {k: v for k, v in headers.items() if k.lower() != name}
        return Placed(
            body=body,
            headers={**kept, deadline.header: str(written)},
            seconds=deadline.seconds(value),
        )
    assert deadline.field is not None
    if not isinstance(body, dict):
        raise InvalidInput(
            f"the provider takes its deadline in the body field {deadline.field}: the "
            "request body must be a JSON object"
        )
    given = find(body, deadline.field, MISSING)
    if given is not MISSING and given != written:
        raise InvalidInput(
            f"the request body's {deadline.field} is written by jobtrail from the result "
            f"deadline ({format_duration(result)}, so {written!r}): leave it out, or give "
            "the result deadline you want instead"
        )
    changed = placed(body, deadline.field, written)
    if changed is None:
        raise InvalidInput(f"the request body's {deadline.field} is not inside a JSON object")
    return Placed(body=changed, headers=headers, seconds=deadline.seconds(value))


def unplaced(deadline: RemoteDeadline | None, body: Any, headers: dict[str, str]) -> Placed:
    """The request without the deadline jobtrail wrote (a retry-as-new writes its own)."""
    if deadline is None:
        return Placed(body=body, headers=headers, seconds=None)
    if deadline.header is not None:
        kept = {k: v for k, v in headers.items() if k.lower() != deadline.header.lower()}
        return Placed(body=body, headers=kept, seconds=None)
    assert deadline.field is not None
    return Placed(body=without(body, deadline.field), headers=headers, seconds=None)
