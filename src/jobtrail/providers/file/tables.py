"""The [result] and [webhooks] tables of a provider file, as the records the provider runs on."""

from __future__ import annotations

from jobtrail.errors import ProviderConfigError
from jobtrail.providers.file import conventions as cv
from jobtrail.providers.file.keys import ResultKeys, WebhookKeys
from jobtrail.providers.file.spec import (
    ItemsRule,
    ResultSpec,
    WebhookSpec,
)


def result_table(r: ResultKeys | None, inline_field: str | None) -> ResultSpec:
    if r is None:
        return ResultSpec(inline_field=inline_field)
    _countable(r)
    items = r.items
    return ResultSpec(
        path=r.path,
        content_type=r.content_type,
        checksum_header=r.checksum_header,
        checksum_field=r.checksum_field,
        count_header=r.count_header,
        max_bytes=r.max_bytes,
        schema=r.schema,
        items=ItemsRule(path=items.path, status=items.status, ref=items.ref, success=items.success)
        if items
        else None,
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


def webhooks_table(w: WebhookKeys) -> WebhookSpec:
    given = {
        k: getattr(w, k)
        for k in (
            "job_id",
            "state",
            "updated_at",
            "event_id",
            "signature_header",
            "id_header",
            "timestamp_header",
        )
        if getattr(w, k) is not None
    }
    return WebhookSpec(signing=w.signing, secret_env=w.secret_env, tolerance=w.tolerance, **given)
