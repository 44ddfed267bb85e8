"""The keys a provider file may hold, table by table: a key the schema does not know is refused
(a typo must not silently drop a guarantee)."""

from __future__ import annotations

from typing import Any

from jobtrail.errors import ProviderConfigError
from jobtrail.providers import conventions as cv
from jobtrail.providers import sections

# The [poll] table's keys, for a provider file and a code provider's `poll` alike.
POLL_KEYS = frozenset({"initial", "cap", "min", "max", "not_found_grace", "max_refused_reads"})


KEYS: dict[str, frozenset[str]] = {
    "": frozenset(
        {
            "name",
            "base_url",
            "base_url_env",  # read by load_provider_text: overrides base_url when set
            "path_values",  # names given at submit for paths other than the create path
            "auth",
            "trace_header",
            "request_ids",
            "timeout",
            "max_response_bytes",
            "headers",
            "cookies",
            "redact",
            "create",
            "status",
            "states",
            "cancel",
            "result",
            "reconcile",
            "webhooks",
            "deadlines",
            "poll",
        }
    ),
    "auth": sections.AUTH_KEYS | {"value", "token"},  # sections.auth refuses the last two
    "redact": frozenset({"headers", "fields"}),
    "create": frozenset(
        {
            "method",
            "path",
            "idempotency",
            "client_reference",
            "job_id",
            "state",
            "status_url",
            "result",
            "deadline",  # providers/declared.py
            *cv.CREATE_KEYS,
        }
    ),
    "status": frozenset(
        {"path", "state", "progress", "updated_at", "error", "usage", *cv.STATUS_KEYS}
    ),
    "cancel": frozenset({"method", "path", "body"}),
    "result": frozenset(
        {
            "path",
            "content_type",
            "checksum_header",
            "checksum_field",
            "count_header",
            "max_bytes",
            "schema",
            "items",
            "expected_items_from_request",
            *cv.RESULT_KEYS,
        }
    ),
    "reconcile": frozenset({"same_token", "list", "lookup", "token_kept"}),
    "webhooks": frozenset(
        {
            "signing",
            "secret_env",
            "job_id",
            "state",
            "updated_at",
            "event_id",
            "tolerance",
            "signature_header",
            "id_header",
            "timestamp_header",
        }
    ),
    "poll": POLL_KEYS,
}


def check_keys(doc: dict[str, Any]) -> None:
    """Refuse keys the schema does not know: a typo must not silently drop a guarantee."""
    for table, allowed in KEYS.items():
        content = doc.get(table) if table else doc
        if not isinstance(content, dict):
            continue
        unknown = sorted(set(content) - allowed)
        if unknown:
            where = f"[{table}]" if table else "the top level"
            raise ProviderConfigError(
                f"unknown key {unknown[0]!r} in {where}; known keys: {', '.join(sorted(allowed))}"
            )
