"""The [result] and [webhooks] tables of a provider file, read and checked, and the sizes
written like 512KB or 10MB that they (and max_response_bytes) take."""

from __future__ import annotations

from typing import Any

from jobtrail.core.durations import parse_duration
from jobtrail.errors import ProviderConfigError
from jobtrail.providers import conventions as cv
from jobtrail.providers.reader import Reader
from jobtrail.providers.spec import (
    ItemsRule,
    ResultSpec,
    WebhookSpec,
)

SIZE_UNITS = {"b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "kib": 1024, "mib": 1024**2}


def result_table(r: Reader | None, inline_field: str | None) -> ResultSpec:
    if r is None:
        return ResultSpec(inline_field=inline_field)
    items = r.table("items")
    _countable(r)
    return ResultSpec(
        path=r.text("path", None),
        content_type=r.text("content_type", None),
        checksum_header=r.text("checksum_header", None),
        checksum_field=r.text("checksum_field", None),
        count_header=r.text("count_header", None),
        max_bytes=size(r.doc.get("max_bytes", "100MB")),
        schema=r.doc.get("schema"),
        items=ItemsRule(
            path=items.get("path"),
            status=str(items.get("status", "status")),
            ref=refs(items.get("ref", "id")),
            success=tuple(items.get("success", ("succeeded", "success", "ok"))),
        )
        if items
        else None,
        expected_items_from_request=r.text("expected_items_from_request", None),
        inline_field=inline_field,
        **cv.result_keys(r.doc),
    )


def _countable(r: Reader) -> None:
    """A declared record count is checked, or the file is refused: jobtrail counts the
    records of JSON, CSV and JSON Lines results only."""
    media = (r.text("content_type", None) or "").split(";")[0].strip().lower()
    if r.text("count_header", None) is None or not media or r.doc.get("format") == "jsonl":
        return
    if media in ("application/json", "text/csv", "application/csv") or media.endswith("+json"):
        return
    raise ProviderConfigError(
        f"result.count_header: a {media} result cannot be counted, so the stated count could "
        'never be checked; jobtrail counts JSON arrays, CSV and JSON Lines (format = "jsonl")'
    )


def refs(value: Any) -> tuple[str, ...]:
    """`ref = "custom_id"`, or a list tried in order (`["metadata.key", "key"]`)."""
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise ProviderConfigError("result.items.ref must name a field, or a list of them")
    return tuple(names)


def webhooks_table(table: dict[str, Any]) -> WebhookSpec:
    signing = table.get("signing", "standard")
    if signing not in ("standard", "hmac"):
        raise ProviderConfigError('webhooks.signing must be "standard" or "hmac"')
    if "secret_env" not in table:
        raise ProviderConfigError("webhooks.secret_env must name the variable holding the secret")
    extra = {
        k: str(table[k])
        for k in (
            "job_id",
            "state",
            "updated_at",
            "event_id",
            "signature_header",
            "id_header",
            "timestamp_header",
        )
        if k in table
    }
    return WebhookSpec(
        signing=signing,
        secret_env=str(table["secret_env"]),
        tolerance=parse_duration(table.get("tolerance", "5m")),
        **extra,
    )


def size(value: Any) -> int:
    if isinstance(value, int) and value > 0:
        return value
    text = str(value).strip().lower().replace(" ", "")
    for unit in sorted(SIZE_UNITS, key=len, reverse=True):
        if text.endswith(unit) and text[: -len(unit)].replace(".", "", 1).isdigit():
            return int(float(text[: -len(unit)]) * SIZE_UNITS[unit])
    raise ProviderConfigError(f"cannot read the size {value!r}; write it like 512KB or 10MB")
