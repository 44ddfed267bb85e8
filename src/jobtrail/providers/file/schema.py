"""The provider file's schema, described once: each table is a record whose fields carry their
key, type, choices and documentation (`field(metadata=...)`, as attrs and pydantic-settings
do). `read` walks a record and a TOML table together: it refuses a key the record does not
know (a typo must not silently drop a guarantee), checks each value's type and choices, and
names the key, dotted (`reconcile.list.visible_within`), in every error. What is left to
hand code (config.py and its helpers) is the rules that tie keys together.

docs/providers.md's key tables are checked against these records by a test, both ways.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, TypeVar

from jobtrail.core.durations import parse_duration
from jobtrail.errors import InvalidInput, ProviderConfigError


@dataclass(frozen=True)
class Kind:
    """A type a key may hold: what it is called in an error, and how a value is checked and
    turned into what the records hold."""

    phrase: str  # "<key> must be <phrase>"
    accepts: Callable[[Any], bool]
    convert: Callable[[Any], Any] = lambda value: value


def _is_text(value: Any) -> bool:
    return isinstance(value, str)


def _is_texts(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _is_names(value: Any) -> bool:
    return _is_texts(value) and bool(value) and all(value)


SIZE_UNITS = {"b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "kib": 1024, "mib": 1024**2}


def size(value: Any) -> int:
    """A size written as a number of bytes or like 512KB or 10MB."""
    if isinstance(value, int) and value > 0:
        return value
    text = str(value).strip().lower().replace(" ", "")
    for unit in sorted(SIZE_UNITS, key=len, reverse=True):
        if text.endswith(unit) and text[: -len(unit)].replace(".", "", 1).isdigit():
            return int(float(text[: -len(unit)]) * SIZE_UNITS[unit])
    raise InvalidInput(f"cannot read the size {value!r}; write it like 512KB or 10MB")


TEXT = Kind("text", _is_text)
FLAG = Kind("true or false", lambda v: isinstance(v, bool))
NUMBER = Kind("a whole number", lambda v: isinstance(v, int) and not isinstance(v, bool))
DURATION = Kind(
    'a duration such as "90s", "2m" or "1h30m"',
    lambda v: isinstance(v, str | int | float) and not isinstance(v, bool),
    parse_duration,
)
# "never": the window never closes (a miss in a lookup proves nothing, ever)
WINDOW = Kind(
    'a duration such as "60s", or "never"',
    _is_text,
    lambda v: None if v == "never" else parse_duration(v),
)
SIZE = Kind("a size such as 512KB or 10MB", lambda v: isinstance(v, str | int), size)
TABLE = Kind("a table", lambda v: isinstance(v, dict))
LIST = Kind("a list", lambda v: isinstance(v, list), tuple)
TEXTS = Kind("a list of text", _is_texts, tuple)
# one dotted path, or a list of them tried in order
PATHS = Kind(
    "a dotted path or a list of them",
    lambda v: (isinstance(v, str) and bool(v)) or _is_names(v),
    lambda v: (v,) if isinstance(v, str) else tuple(v),
)
TEXT_OR_TABLE = Kind("text or a table", lambda v: isinstance(v, str | dict))
TEXT_OR_LIST = Kind("text or a list", lambda v: isinstance(v, str | list))


def key(
    kind: Kind | type[Any],
    doc: str,
    *,
    default: Any = None,
    name: str | None = None,
    choices: tuple[str, ...] = (),
    must: str | None = None,
    required: bool = False,
    each: type[Any] | None = None,
) -> Any:
    """A field of a provider-file record: its TOML `name` (the field's own by default), its
    kind (a Kind, or a record for a sub-table), the `choices` it allows, the words of its
    type error (`must`) and its documentation. `each`: a table of sub-tables of that record,
    keyed by a name the file chooses (`[status.by_header.Location]`)."""
    meta = {
        "key": name,
        "kind": kind,
        "doc": doc,
        "choices": choices,
        "must": must,
        "required": required,
        "each": each,
    }
    if required:
        return field(metadata=meta)
    return field(default=default, metadata=meta)


R = TypeVar("R")


def keys_of(record: type[Any]) -> dict[str, Any]:
    """The TOML keys of a record, each with its dataclass field."""
    return {f.metadata.get("key") or f.name: f for f in fields(record)}


def read(record: type[R], table: dict[str, Any], where: str = "") -> R:
    """`table` checked against `record`, as that record: unknown keys refused, each value's
    type and choices checked, sub-tables read the same way; `where` is the table's dotted
    name ("" for the top level)."""
    known = keys_of(record)
    refused: dict[str, str] = getattr(record, "REFUSED", {})
    for name in table:
        if name in refused:
            raise ProviderConfigError(refused[name])
        if name not in known:
            label = f"[{where}]" if where and "." not in where else where or "the top level"
            raise ProviderConfigError(
                f"unknown key {name!r} in {label}; known keys: {', '.join(sorted(known))}"
            )
    values = {}
    for name, f in known.items():
        dotted = f"{where}.{name}" if where else name
        if name not in table:
            if f.metadata["required"]:
                what = f"the [{name}] table" if _is_record(f.metadata["kind"]) else dotted
                raise ProviderConfigError(f"{what} is required")
            continue
        values[f.name] = _value(f.metadata, table[name], dotted)
    return record(**values)


def _is_record(kind: Any) -> bool:
    return isinstance(kind, type) and hasattr(kind, "__dataclass_fields__")


def _value(meta: Any, value: Any, dotted: str) -> Any:
    kind = meta["kind"]
    if _is_record(kind) or meta["each"] is not None:
        if not isinstance(value, dict):
            raise ProviderConfigError(f"{dotted} must be {meta['must'] or 'a table'}")
        if meta["each"] is not None:
            return {str(n): _sub(meta["each"], t, f"{dotted}.{n}") for n, t in value.items()}
        return read(kind, value, dotted)
    if not kind.accepts(value):
        raise ProviderConfigError(f"{dotted} must be {meta['must'] or kind.phrase}, got {value!r}")
    if meta["choices"] and value not in meta["choices"]:
        choices = " or ".join(f'"{c}"' for c in meta["choices"])
        raise ProviderConfigError(f"{dotted} must be {choices}, not {value!r}")
    try:
        return kind.convert(value)
    except InvalidInput as exc:
        raise ProviderConfigError(f"{dotted}: {exc}") from None


def _sub(record: type[Any], value: Any, dotted: str) -> Any:
    if not isinstance(value, dict):
        raise ProviderConfigError(f"{dotted} must be a table such as {{ codes = {{...}} }}")
    return read(record, value, dotted)


def default_of(record: type[Any], name: str) -> Any:
    """The default a record gives a key the file leaves out."""
    f = keys_of(record)[name]
    return None if f.default is MISSING else f.default
