"""Values <-> column text, shared by both dialects and by the codec's two halves: NUL-safe
text, deterministic JSON, the provider document's key, the result summary's document."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import asdict
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from jobtrail.core.model import ItemCounts, ResultSummary


@lru_cache(maxsize=64)
def config_key(document: str) -> str:
    return "sha256:" + hashlib.sha256(document.encode()).hexdigest()


def keyed_config(row: dict[str, Any]) -> tuple[str, str]:
    """An operation row about to be inserted, its provider document swapped for the key:
    returns (key, document), which the same transaction stores in provider_configs."""
    document = row["provider_config"]
    row["provider_config"] = key = config_key(document)
    return key, document


# Stored JSON needs to be deterministic and readable, not RFC 8785 (fingerprints use that):
# the C encoder with sorted keys is several times faster on this hot path.
_ENCODE = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
).encode


def storable(value: Any) -> Any:
    """A text as a text column holds it: PostgreSQL text cannot hold U+0000, so both stores
    keep a NUL in a text field (a provider's state word, id, request id, an error cause) as
    U+FFFD, the replacement character. JSON documents keep it exactly: their text escapes it
    as \\u0000. Anything but a text is returned as it is; applying it twice changes nothing."""
    if type(value) is str and "\x00" in value:
        return value.replace("\x00", "\ufffd")
    return value


def dump(value: Any) -> str | None:
    return None if value is None else _ENCODE(value)


def load(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def fields_of(record: Any) -> dict[str, Any]:
    """A flat record's fields as a dict: what asdict gives, without its deep copy."""
    return dict(record.__dict__)


class LastOne:
    """`fn` that remembers its result for the last argument it saw (by identity). A step
    stamps many columns with one `now` and a batch submits under one provider file, so the
    last one is all worth remembering. The pair is swapped as one tuple: threads may share
    an instance."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self._fn = fn
        self._last: tuple[Any, Any] = (object(), None)

    def __call__(self, value: Any) -> Any:
        last = self._last
        if last[0] is value:
            return last[1]
        result = self._fn(value)
        self._last = (value, result)
        return result


# The provider file is shared by every operation submitted under it.
shared_text = LastOne(dump)


@lru_cache(maxsize=64)
def load_shared(text: str) -> Any:
    """Documents that many operations share (provider file, capabilities), decoded once.
    The result is shared: callers must treat it as read-only, as they treat all records."""
    return json.loads(text)


def column(row: Any, name: str) -> Any:
    """A column that older rows (an archive's records) may lack."""
    try:
        return row[name]
    except (KeyError, IndexError):
        return None


def result_doc(summary: ResultSummary) -> dict[str, Any]:
    return asdict(summary)


def result_summary(doc: Mapping[str, Any]) -> ResultSummary:
    items = doc.get("items")
    return ResultSummary(
        **{k: v for k, v in doc.items() if k not in ("items", "checks", "problems")},
        items=ItemCounts(**items | {"failed_refs": tuple(items["failed_refs"])}) if items else None,
        checks=tuple(doc.get("checks", ())),
        problems=tuple(doc.get("problems", ())),
    )


def sqlite_time(value: datetime | None) -> str | None:
    """A moment as the SQLite ledger stores it: UTC, fixed-width, microseconds, `Z`."""
    if value is None:
        return None
    # isoformat gives the same fixed-width text as strftime("%Y-%m-%dT%H:%M:%S.%fZ") for
    # every year from 1000 on, in a third less time; a step formats a dozen times.
    return value.astimezone(UTC).isoformat(timespec="microseconds")[:-6] + "Z"


def sqlite_moment(value: Any) -> datetime | None:
    """A moment read back from the SQLite ledger's text (`sqlite_time`)."""
    return None if value is None else datetime.fromisoformat(value)
