"""Asking for work: an operation recorded durably before any call (the same key and request
return it again; a changed request under the key is refused)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from jobtrail.core.admission import check_own_fields, check_request
from jobtrail.core.audit import AuditEntry
from jobtrail.core.canonical import canonical_json, fingerprint
from jobtrail.core.ids import idempotency_token, operation_id, trace_id
from jobtrail.core.model import (
    JobRequest,
    Operation,
)
from jobtrail.core.proof import token_outlived
from jobtrail.core.remote_deadline import place as place_deadline
from jobtrail.errors import (
    InvalidInput,
    KeyConflict,
)
from jobtrail.ledger.common import LedgerBase
from jobtrail.ledger.policy import Action
from jobtrail.ledger.redaction import Redactors, redacted_entries

if TYPE_CHECKING:  # imported where used: reading the ledger (`status`) needs no provider,
    # nor the core's apply (its planner, schedules and evidence rules)
    from jobtrail.providers.code.contract import CodeSpec
    from jobtrail.providers.file.config import ProviderSpec

MAX_BODY_BYTES = 1024 * 1024  # a request body, as canonical JSON (docs/guarantees/surfaces.md)


class Asking(LedgerBase):
    async def submit(
        self,
        provider: ProviderSpec | CodeSpec,
        body: Any = None,
        *,
        headers: dict[str, str] | None = None,
        path: Mapping[str, str] | None = None,
        key: str | None = None,
        actor: str,
        authorized_by: str | None = None,
        reason: str | None = None,
        create_deadline: timedelta | None = None,
        result_deadline: timedelta | None = None,
        cancel_deadline: timedelta | None = None,
    ) -> Operation:
        """Write the operation record durably; nothing is sent here. The same key with the
        same request returns the existing operation. `provider` is a provider file (the
        HTTP provider drives the operation) or a code provider's declaration (only a worker
        having that plug-in does)."""
        op, _ = await self.admit(
            provider,
            body,
            headers=headers,
            path=path,
            key=key,
            actor=actor,
            authorized_by=authorized_by,
            reason=reason,
            create_deadline=create_deadline,
            result_deadline=result_deadline,
            cancel_deadline=cancel_deadline,
        )
        return op

    async def admit(
        self,
        provider: ProviderSpec | CodeSpec,
        body: Any,
        *,
        headers: dict[str, str] | None = None,
        path: Mapping[str, str] | None = None,
        key: str | None = None,
        actor: str,
        authorized_by: str | None = None,
        reason: str | None = None,
        create_deadline: timedelta | None = None,
        result_deadline: timedelta | None = None,
        cancel_deadline: timedelta | None = None,
    ) -> tuple[Operation, bool]:
        """`submit`, also saying whether the operation already existed under its key (True:
        nothing new was recorded). `path` fills the create path's placeholders."""
        await self.permit(Action.SUBMIT, actor, None, subject=key)
        request, request_fingerprint, body_size = prepare_submission(
            provider,
            body,
            headers=headers,
            path=path,
            key=key,
            redactors=self._redactors,
            create_deadline=create_deadline,
            result_deadline=result_deadline,
        )
        deadlines = provider.deadlines
        op = new_operation(
            self,
            provider,
            request,
            request_fingerprint,
            key=key,
            actor=actor,
            authorized_by=authorized_by,
            reason=reason,
            create_deadline=create_deadline or deadlines["create"],
            result_deadline=result_deadline or deadlines["result"],
            cancel_timeout=cancel_deadline or deadlines["cancel"],
        )
        entry = AuditEntry(
            at=op.created_at,
            operation_id=op.operation_id,
            kind="operation.submitted",
            actor=actor,
            data={
                "key": op.key,
                "provider": op.provider,
                "provider_kind": op.provider_kind.value,
                "provider_version": op.provider_version,
                "target": request.target,
                "fingerprint": request_fingerprint,
                "idempotency_token": op.idempotency_token,
                "trace_id": op.trace_id,
                "authorized_by": authorized_by,
                "reason": reason,
                # The request body is stored once, in the operation row; the chain holds
                # its fingerprint and size, which bind that row (docs/guarantees/surfaces.md).
                "body_bytes": body_size,
            },
        )
        stored = await self.store.create_operation(
            op, redacted_entries([entry], self._redactors.for_operation(op))
        )
        if stored.operation_id == op.operation_id:
            return stored, False
        from jobtrail.providers.file.config import ProviderSpec

        if isinstance(provider, ProviderSpec) and _recorded_before_base_url(
            stored, provider, request
        ):
            return stored, True
        return _same_request(stored, request_fingerprint, op.key), True


def new_operation(
    ledger: LedgerBase,
    provider: ProviderSpec | CodeSpec,
    request: JobRequest,
    request_fingerprint: str,
    *,
    key: str | None,
    actor: str,
    authorized_by: str | None,
    reason: str | None,
    create_deadline: timedelta,
    result_deadline: timedelta,
    cancel_timeout: timedelta,
    candidate_job_id: str | None = None,
) -> Operation:
    """A new operation asking `provider` for `request`, as a submit and a census's adoption
    record it: a fresh id, idempotency token and trace id, created now on the ledger's clock
    with its deadlines counted from then, and due now; one that adopts `candidate_job_id` is
    never due (nothing is ever sent for its create)."""
    now = ledger.now()
    op_id = operation_id(now, ledger.rand)
    return Operation(
        operation_id=op_id,
        key=key or op_id,
        provider=provider.name,
        provider_config=provider.document,
        provider_kind=provider.kind,
        provider_version=provider.version,
        capabilities=provider.capabilities,
        request=request,
        fingerprint=request_fingerprint,
        idempotency_token=idempotency_token(ledger.rand),
        trace_id=trace_id(ledger.rand),
        actor=actor,
        authorized_by=authorized_by,
        reason=reason,
        created_at=now,
        create_deadline=now + create_deadline,
        result_deadline=now + result_deadline,
        cancel_timeout=cancel_timeout,
        candidate_job_id=candidate_job_id,
        next_poll_at=None if candidate_job_id else now,
        updated_at=now,
    )


def prepare_submission(
    provider: ProviderSpec | CodeSpec,
    body: Any,
    *,
    headers: Mapping[str, str] | None = None,
    path: Mapping[str, str] | None = None,
    key: str | None = None,
    redactors: Redactors | None = None,
    create_deadline: timedelta | None = None,
    result_deadline: timedelta | None = None,
) -> tuple[JobRequest, str, int]:
    """The request a submit would record, its fingerprint and its body's size, or the
    InvalidInput that refuses it: everything a submit checks before it writes, so that a
    surface can refuse a bad submit before it opens (or creates) a ledger."""
    from jobtrail.providers.file.baseurl import unfilled
    from jobtrail.providers.file.config import ProviderSpec
    from jobtrail.providers.file.pathvalues import checked

    if isinstance(provider, ProviderSpec):
        placeholder = unfilled(provider)  # ARM's .../subscriptions/SUBSCRIPTION/...
        if placeholder is not None:
            raise InvalidInput(placeholder)
    headers = dict(headers or {})
    in_use = provider.secret_values()  # read from the environment once per submit
    check_request(
        headers,
        body,
        (redactors or Redactors()).extended(provider.redactor, in_use),
        own=_own_headers(provider),
    )
    check_own_fields(body, _own_fields(provider))
    values = checked(provider.create_placeholders, path)
    if any(s in value for s in in_use if s for value in values.values()):
        raise InvalidInput("a path value holds a secret in use; credentials go in `auth`")
    outlived = token_outlived(
        provider.capabilities, create_deadline or provider.deadlines["create"]
    )
    if outlived is not None:
        raise InvalidInput(outlived)
    # The provider's own deadline, from the result deadline: part of what is fingerprinted
    placed = place_deadline(
        provider.remote_deadline, body, headers, result_deadline or provider.deadlines["result"]
    )
    body, headers = placed.body, placed.headers
    request = JobRequest(
        method=provider.create_method,
        target=provider.target_with(values) if values else provider.target,
        body=body,
        headers=headers,
        path=values,
        remote_deadline=placed.seconds,
    )
    # The fingerprint is computed first: it refuses what is not JSON before any write.
    request_fingerprint = fingerprint(request.method, request.target, body, headers, values)
    body_size = len(canonical_json(body).encode("utf-8"))
    if body_size > MAX_BODY_BYTES:
        raise InvalidInput(
            f"the request body is {body_size} bytes; jobtrail records bodies up to "
            f"{MAX_BODY_BYTES} bytes (1 MiB): send a reference to the data instead"
        )
    if key is not None:
        _check_key(key)  # an existing key is found by create_operation, atomically
    return request, request_fingerprint, body_size


def _own_headers(provider: ProviderSpec | CodeSpec) -> list[str]:
    from jobtrail.providers.code.contract import CodeSpec

    if isinstance(provider, CodeSpec):
        return ["traceparent"]
    placed = (provider.idempotency, provider.client_reference)
    names = [p.header for p in placed if p is not None and p.header]
    # the client request id header ([request_ids] send) may be given: it is then sent on
    # every call of the operation instead of a fresh UUID (providers/http/provider.py)
    names += [h for h in (provider.trace_header,) if h]
    return [*names, "traceparent"]


def _own_fields(provider: ProviderSpec | CodeSpec) -> dict[str, str]:
    """The body fields jobtrail (or the code provider) writes at each create, and what."""
    from jobtrail.providers.file.config import ProviderSpec

    if not isinstance(provider, ProviderSpec):
        what = f"its own value (the code provider {provider.name}'s)"
        return dict.fromkeys(provider.own_fields, what)
    places = (
        (provider.idempotency, "the operation's idempotency token"),
        (provider.client_reference, "the client reference (the operation id)"),
    )
    return {p.field: what for p, what in places if p is not None and p.field}


def _check_key(key: str) -> None:
    if not key or len(key) > 200 or not key.isprintable():
        raise InvalidInput("an operation key must be 1 to 200 printable characters")


def _recorded_before_base_url(
    existing: Operation, provider: ProviderSpec, request: JobRequest
) -> bool:
    """The same request, recorded before targets named the base URL (`NAME:METHOD PATH`):
    same provider, base URL, method, path, body and headers. Any difference is still
    another request."""
    old_target = f"{provider.name}:{provider.create_method} {provider.create_path}"
    config = existing.provider_config if isinstance(existing.provider_config, dict) else {}
    if request.path or existing.request.target != old_target:
        return False
    if str(config.get("base_url", "")).rstrip("/") != provider.base_url:
        return False
    again = fingerprint(request.method, old_target, request.body, request.headers or None)
    return again == existing.fingerprint


def _same_request(existing: Operation, fingerprint_now: str, key: str) -> Operation:
    if existing.fingerprint != fingerprint_now:
        raise KeyConflict(
            f"key {key!r} already names operation {existing.operation_id} with a different "
            f"request ({existing.fingerprint[:19]}…, now {fingerprint_now[:19]}…); a changed "
            "request is a new operation: use a new key, and cancel the old operation if it "
            "should not run"
        )
    return existing
