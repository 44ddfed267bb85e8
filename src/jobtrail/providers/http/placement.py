"""Where the idempotency token and the client reference go in a create request: a header,
a (dotted) body field or a query parameter; nowhere for idempotency by nature."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from jobtrail.core.lookup import placed
from jobtrail.core.model import Operation
from jobtrail.providers.file.spec import ProviderSpec


def place(
    spec: ProviderSpec, op: Operation, document: Any, headers: dict[str, str]
) -> tuple[Any, dict[str, str]] | str:
    """The create body and query with the token and client reference in their declared
    places (headers are set in `headers`), or why they cannot be placed."""
    query: dict[str, str] = {}
    for placement, value in (
        (spec.idempotency, op.idempotency_token),
        (spec.client_reference, op.operation_id),
    ):
        if placement is None or placement.natural:
            continue
        if placement.uuid:
            value = uuid_of(value)
        if placement.header:
            headers[placement.header] = value
        elif placement.query:
            query[placement.query] = value
        elif placement.field:
            if not isinstance(document, dict):
                return f"the provider wants `{placement.field}` in a JSON object body"
            document = placed(document, placement.field, value)
            if document is None:
                return f"the request body's `{placement.field}` is not a JSON object to add to"
    return document, query


def written_fields(spec: ProviderSpec, op: Operation) -> dict[str, str]:
    """The body fields (dotted paths) a create of `op` gets from jobtrail, with their values."""
    written = {}
    for placement, value in (
        (spec.idempotency, op.idempotency_token),
        (spec.client_reference, op.operation_id),
    ):
        if placement is not None and placement.field and not placement.natural:
            written[placement.field] = uuid_of(value) if placement.uuid else value
    return written


def uuid_of(value: str) -> str:
    """A UUID (version 4 form) derived from `value`: the same token always gives the same
    UUID, so a retry carries the same one (AIP-155 `requestId` is a UUID4)."""
    digest = hashlib.sha256(value.encode("utf-8")).digest()[:16]
    return str(uuid.UUID(bytes=digest, version=4))


def reference_value(spec: ProviderSpec, op: Operation) -> str:
    """The client reference as the create placed it (`{client_reference}` in a path): the
    operation id, or the UUID derived from it where the provider file asks for one."""
    placement = spec.client_reference
    if placement is not None and placement.uuid:
        return uuid_of(op.operation_id)
    return op.operation_id
