"""The [result] table of a provider file, as the record the provider runs on."""

from __future__ import annotations

from jobtrail.errors import ProviderConfigError
from jobtrail.providers.file import conventions as cv
from jobtrail.providers.file.keys import ResultKeys
from jobtrail.providers.file.spec import (
    ResultSpec,
)


def result_table(r: ResultKeys | None, inline_field: str | None) -> ResultSpec:
    if r is None:
        return ResultSpec(inline_field=inline_field)
    _countable(r)
    return ResultSpec(
        path=r.path,
        content_type=r.content_type,
        checksum_header=r.checksum_header,
        checksum_field=r.checksum_field,
        count_header=r.count_header,
        max_bytes=r.max_bytes,
        schema=r.schema,
        items=r.items,
        expected_items_from_request=r.expected_items_from_request,
        inline_field=inline_field,
        **cv.result_keys(r),
    )


def _countable(r: ResultKeys) -> None:
    """A declared record count is checked, or the file is refused: jobtrail counts the
    records of JSON, CSV and JSON Lines results only."""
    media = (r.content_type or "").split(";")[0].strip().lower()
    if r.count_header is None or not media or r.format == "jsonl":
        return
    if media in ("application/json", "text/csv", "application/csv") or media.endswith("+json"):
        return
    raise ProviderConfigError(
        f"result.count_header: a {media} result cannot be counted, so the stated count could "
        'never be checked; jobtrail counts JSON arrays, CSV and JSON Lines (format = "jsonl")'
    )
