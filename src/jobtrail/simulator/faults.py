"""Per-job fault settings of the provider simulator.

Faults arrive as plain JSON (a create body's ``"_sim"`` object, or the admin
endpoint), so this module is the one place that checks their names and types:
a typo in a test's fault must fail loudly, never silently run the happy path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal, get_args

CancelMode = Literal["honour", "ignore", "race", "reject"]
WebhookMode = Literal["normal", "duplicate", "out_of_order", "none"]
Malformed = Literal["not_json", "missing_job_id", "wrong_types", "huge"]
StatusLocation = Literal["Location", "Operation-Location", "body"]
Outcome = Literal["succeeded", "failed"]
DotJobId = Literal[".", ".."]
HostileStatusUrl = Literal["relative", "off_origin", "userinfo"]

# What `hostile_text` appends to provider words: an OSC 8 link, a screen clear, a colour, a
# bell, a carriage return, a backspace, a C1 CSI and a right-to-left override.
HOSTILE_TEXT = "\x1b]8;;http://evil.example/\x07click\x1b]8;;\x07\x1b[2J\x1b[31m\r\x08\x9b0m\u202e"
# HTTP header values cannot carry C0 controls; these are the ones they can: C1 and bidi.
HOSTILE_HEADER_TEXT = "\x9b31m\u202e\u2066"


def with_nul(word: str) -> str:
    """What `nul_text` does to a provider word: a NUL in its middle (PostgreSQL text cannot
    hold one), as in "run\\x00ning"."""
    return f"{word[:3]}\x00{word[3:]}"


DEFAULT_ITEMS = 3
DEFAULT_DURATION_POLLS = 2


class FaultError(ValueError):
    """A fault specification is unknown or badly typed; the message names it."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Throttle:
    """Answer ``status`` with a Retry-After hint to the first ``times`` requests."""

    status: int
    retry_after: int | Literal["date"]
    times: int


@dataclass(frozen=True, kw_only=True, slots=True)
class Rejection:
    """A definitive create rejection: nothing is created."""

    status: int
    message: str


# -- hostile schedules (issue 9, items 4-6): hints and refusals on status reads ------------

# Retry-After values a hostile or careless provider sends, by name (JSON-friendly).
HINTS = {
    "far": "31536000",  # a year
    "zero": "0",
    "huge": "9" * 5000,  # past Python's int-from-text digit limit
    "date_9999": "Fri, 31 Dec 9999 23:59:59 GMT",
    "negative": "-30",
    "garbage": "whenever, really",
}


@dataclass(frozen=True, kw_only=True, slots=True)
class Hint:
    """Send ``Retry-After: HINTS[value]`` with running status answers, on the first
    ``times`` status reads (every read when ``times`` is None)."""

    value: str
    times: int | None = None

    @property
    def header(self) -> str:
        return HINTS[self.value]


@dataclass(frozen=True, kw_only=True, slots=True)
class Refusal:
    """Answer the first ``times`` status reads (every read when None) with ``status``, a
    definitive 4xx; ``status: 404, times: 3`` is a provider slow to show a new job."""

    status: int
    times: int | None = None


# What an `unreadable_status` answer's 200 carries, by name: each states nothing that can be
# read as a state. `short` is the transport case for contrast: a body cut short of its
# Content-Length (the connection closes mid-body), which a client sees as a broken call.
UNREADABLE_BODIES = {
    "empty": b"",
    "no_state": b"{}",
    "cut": b'{"job_id": "job", "state": "runn',
    "not_json": b"<html><body>Service temporarily overloaded</body></html>",
    "short": b'{"job_id": "job", "state": "running"}',
}


@dataclass(frozen=True, kw_only=True, slots=True)
class Unreadable:
    """Answer status reads 200 with ``UNREADABLE_BODIES[body]``: the first ``times`` reads,
    or every ``every``-th read (2 = every other read), or every read when both are None.
    An unreadable read is not an observation: the job does not advance."""

    body: str
    times: int | None = None
    every: int | None = None

    def applies(self, read: int) -> bool:
        if self.every is not None:
            return read % self.every == 0
        return self.times is None or read <= self.times


def _hint(name: str, raw: Any) -> Hint:
    if not isinstance(raw, Mapping) or set(raw) - {"value", "times"}:
        raise FaultError(f"{name} must be an object with value and times")
    value = raw.get("value")
    if value not in HINTS:
        raise FaultError(f"{name}.value must be one of {sorted(HINTS)}, got {value!r}")
    return Hint(value=value, times=_optional_int(f"{name}.times", raw.get("times")))


def _refusal(name: str, raw: Any) -> Refusal:
    if not isinstance(raw, Mapping) or set(raw) - {"status", "times"}:
        raise FaultError(f"{name} must be an object with status and times")
    status = _int(f"{name}.status", raw.get("status", 404), 400, 499)
    if status in (408, 425, 429):
        raise FaultError(f"{name}.status {status} means 'later', not a refusal")
    return Refusal(status=status, times=_optional_int(f"{name}.times", raw.get("times")))


def _unreadable(name: str, raw: Any) -> Unreadable:
    if not isinstance(raw, Mapping) or set(raw) - {"body", "times", "every"}:
        raise FaultError(f"{name} must be an object with body, times and every")
    body = raw.get("body")
    if body not in UNREADABLE_BODIES:
        raise FaultError(f"{name}.body must be one of {sorted(UNREADABLE_BODIES)}, got {body!r}")
    every = raw.get("every")
    return Unreadable(
        body=body,
        times=_optional_int(f"{name}.times", raw.get("times")),
        every=None if every is None else _int(f"{name}.every", every, low=1),
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class Faults:
    """Everything a single simulated job may do wrong; defaults are a well-behaved job."""

    # create side
    drop_create_answer: int = 0
    delay_create: float = 0.0
    delay_accept: float = 0.0  # seconds before the job is made (delay_create: after)
    throttle_create: Throttle | None = None
    reject_create: Rejection | None = None
    create_error_after_accept: int | None = None
    malformed_create: Malformed | None = None
    different_id_on_retry: bool = False
    create_status: int = 202
    status_location: StatusLocation = "Location"
    sync_result: bool = False
    # an eventually consistent listing: the job shows in `GET /v1/reports?client_reference=`
    # only this many seconds after its create arrived (its create still in flight, or a
    # listing that lags its writes)
    list_visible_after: float = 0.0
    # observation side
    duration_polls: int = DEFAULT_DURATION_POLLS
    duration_seconds: float | None = None
    outcome: Outcome = "succeeded"
    throttle_status: Throttle | None = None
    status_error: int = 0
    status_retry_after: int | None = None
    never_finish: bool = False
    # cancel side
    cancel: CancelMode = "honour"
    throttle_cancel: Throttle | None = None  # cancels answered 429/503 with Retry-After
    # result side
    items: int = DEFAULT_ITEMS
    failed_items: int = 0
    bad_checksum: bool = False
    wrong_content_type: bool = False
    result_gone: int | None = None
    result_error: int = 0
    record_count_mismatch: bool = False
    # each item's value derived from the job id, so no two jobs' results are the same bytes
    # (by default every job with the same items returns the same result)
    distinct_result: bool = False
    # webhooks
    webhooks: WebhookMode = "normal"
    # secrets (hostile providers): echo the bearer token the request carried into every
    # field of every answer about the job (see simulator/echo.py); its first status read
    # is a 500 whose error body holds the token
    echo_credentials: bool = False
    # hostile answers (issue 9, items 11-13): a provider whose words are traps
    dot_job_id: DotJobId | None = None  # the create answer names the job "." or ".."
    hostile_status_url: HostileStatusUrl | None = None  # see create._hostile_status_url
    set_cookie: bool = False  # create answers set a session cookie naming the job
    hostile_text: bool = False  # terminal escapes in state words, progress and request ids
    nul_text: bool = False  # a NUL inside state words, progress notes and error messages
    # hostile create (issue 9): how every same-key retry is answered once the first create
    # made the job (and, with drop_create_answer, its answer was lost)
    reject_retry: Rejection | None = None  # refused: 409 "already exists", 400, 422
    retry_error: int | None = None  # a 5xx
    retry_malformed: bool = False  # a 202 whose body is a proxy's HTML page
    # hostile schedules (issue 9, items 4-6): see Hint and Refusal
    status_hint: Hint | None = None
    refuse_status: Refusal | None = None
    # a provider that breaks its status contract: 200s that state nothing (see Unreadable)
    unreadable_status: Unreadable | None = None

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form, for the admin endpoints."""
        return asdict(self)


NO_FAULTS = Faults()
FAULT_NAMES = frozenset(f.name for f in fields(Faults))
_NULLABLE = frozenset(f.name for f in fields(Faults) if f.default is None)


def merge_fault_specs(*specs: Mapping[str, Any] | None) -> dict[str, Any]:
    """Later specs win name by name (default < per client reference < the request's own)."""
    merged: dict[str, Any] = {}
    for spec in specs:
        if spec:
            merged.update(spec)
    return merged


def parse_faults(spec: Mapping[str, Any]) -> Faults:
    """Turn a JSON fault spec into :class:`Faults`, refusing unknown names and bad types."""
    if not isinstance(spec, Mapping):
        raise FaultError("faults must be a JSON object")
    unknown = sorted(set(spec) - FAULT_NAMES)
    if unknown:
        raise FaultError(f"unknown fault(s): {', '.join(unknown)}; known: {sorted(FAULT_NAMES)}")
    if not spec:
        return NO_FAULTS
    # null is the default of a fault that is off by default (None), and refused elsewhere
    kw: dict[str, Any] = {
        name: None if raw is None and name in _NULLABLE else _PARSERS[name](name, raw)
        for name, raw in spec.items()
    }
    faults = Faults(**kw)
    if faults.failed_items > faults.items:
        raise FaultError("failed_items cannot exceed items")
    return faults


def _int(name: str, raw: Any, low: int = 0, high: int | None = None) -> int:
    # bool is an int subclass; accepting True as 1 here would hide typos like "times": true
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise FaultError(f"{name} must be an integer, got {raw!r}")
    if raw < low or (high is not None and raw > high):
        raise FaultError(f"{name} must be in [{low}, {high if high is not None else '∞'}]")
    return raw


def _number(name: str, raw: Any) -> float:
    if isinstance(raw, bool) or not isinstance(raw, int | float) or raw < 0:
        raise FaultError(f"{name} must be a non-negative number, got {raw!r}")
    return float(raw)


def _flag(name: str, raw: Any) -> bool:
    if not isinstance(raw, bool):
        raise FaultError(f"{name} must be true or false, got {raw!r}")
    return raw


def _choice(allowed: tuple[str, ...]) -> Callable[[str, Any], str]:
    def parse(name: str, raw: Any) -> str:
        if raw not in allowed:
            raise FaultError(f"{name} must be one of {list(allowed)}, got {raw!r}")
        return str(raw)

    return parse


def _status_in(allowed: tuple[int, ...]) -> Callable[[str, Any], int]:
    def parse(name: str, raw: Any) -> int:
        value = _int(name, raw)
        if value not in allowed:
            raise FaultError(f"{name} must be one of {list(allowed)}, got {raw!r}")
        return value

    return parse


def _optional_int(name: str, raw: Any) -> int | None:
    return None if raw is None else _int(name, raw)


def _drop(name: str, raw: Any) -> int:
    # true is documented as "drop once", so it is the one place a bool means a count
    if isinstance(raw, bool):
        return 1 if raw else 0
    return _int(name, raw)


def _duration_polls(name: str, raw: Any) -> int:
    return _int(name, raw, low=1)


def _throttle(name: str, raw: Any) -> Throttle:
    if not isinstance(raw, Mapping):
        raise FaultError(f"{name} must be an object with status, retry_after, times")
    extra = set(raw) - {"status", "retry_after", "times"}
    if extra:
        raise FaultError(f"{name}: unknown field(s) {sorted(extra)}")
    retry_after = raw.get("retry_after", 1)
    if retry_after != "date":
        retry_after = _int(f"{name}.retry_after", retry_after)
    return Throttle(
        status=_status_in((429, 503))(f"{name}.status", raw.get("status", 429)),
        retry_after=retry_after,
        times=_int(f"{name}.times", raw.get("times", 1)),
    )


def _rejection(name: str, raw: Any) -> Rejection:
    if not isinstance(raw, Mapping):
        raise FaultError(f"{name} must be an object with status and message")
    message = raw.get("message", "request rejected by the provider")
    if not isinstance(message, str):
        raise FaultError(f"{name}.message must be a string")
    return Rejection(
        status=_int(f"{name}.status", raw.get("status", 400), 400, 499), message=message
    )


def _server_error(name: str, raw: Any) -> int:
    return _int(name, raw, 500, 599)


_PARSERS: dict[str, Callable[[str, Any], Any]] = {
    "drop_create_answer": _drop,
    "delay_accept": _number,
    "delay_create": _number,
    "throttle_create": _throttle,
    "reject_create": _rejection,
    "create_error_after_accept": _server_error,
    "malformed_create": _choice(get_args(Malformed)),
    "different_id_on_retry": _flag,
    "create_status": _status_in((200, 201, 202)),
    "status_location": _choice(get_args(StatusLocation)),
    "sync_result": _flag,
    "list_visible_after": _number,
    "duration_polls": _duration_polls,
    "duration_seconds": _number,
    "outcome": _choice(get_args(Outcome)),
    "throttle_status": _throttle,
    "throttle_cancel": _throttle,
    "status_error": _int,
    "status_retry_after": _int,
    "never_finish": _flag,
    "cancel": _choice(get_args(CancelMode)),
    "items": _int,
    "failed_items": _int,
    "bad_checksum": _flag,
    "wrong_content_type": _flag,
    "result_gone": _status_in((404, 410)),
    "result_error": _int,
    "record_count_mismatch": _flag,
    "distinct_result": _flag,
    "webhooks": _choice(get_args(WebhookMode)),
    # secrets (hostile providers)
    "echo_credentials": _flag,
    # hostile answers
    "dot_job_id": _choice(get_args(DotJobId)),
    "hostile_status_url": _choice(get_args(HostileStatusUrl)),
    "set_cookie": _flag,
    "hostile_text": _flag,
    "nul_text": _flag,
    # hostile create
    "reject_retry": _rejection,
    "retry_error": _server_error,
    "retry_malformed": _flag,
    "status_hint": _hint,
    "refuse_status": _refusal,
    "unreadable_status": _unreadable,
}
